"""Bad input: a clear ValueError/TypeError naming the bad part, and nothing is modified."""

import re

import numpy as np
import pytest

import reorder

from reorder.testing.reference import ref_from_plain


def _values(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(1, 100, size=shape)).astype(dtype)


def _nchw16c(dims=(2, 17, 3, 5), dtype=np.float32):
    return ref_from_plain(_values(dims, dtype), "abcd", "aBcd16b")


def _expect_error(call, pattern, *arrays, exc=(ValueError, TypeError)):
    """Run ``call``; it must raise ``exc`` whose message matches ``pattern`` (case-insensitive)
    and must leave every array in ``arrays`` bit-identical."""
    before = [np.array(a, copy=True) for a in arrays]
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    assert re.search(pattern, msg, re.IGNORECASE), f"message does not name the bad part ({pattern}): {msg!r}"
    for a, b in zip(arrays, before):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert _same_bits(a, b), "an array was modified by a failing call"
    return info.value


def _same_bits(a, b):
    if a.dtype.kind in "OUS":
        return np.array_equal(a, b)
    return np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                          np.ascontiguousarray(b).reshape(-1).view(np.uint8))


def _sentinel(shape, dtype=np.float32):
    out = np.empty(shape, dtype)
    out.view(np.uint8).fill(0xAB)
    return out


# -------------------------------------------------------------------------------------- tags

@pytest.mark.parametrize("stag,dtag,bad", [
    ("nchw", "nChw16q", "nChw16q"),
    ("nchw", "nChw16c!", "nChw16c!"),
    ("nzhw", "nChw16c", "nzhw"),
    ("nchw", "abcb", "abcb"),
    ("nchw", "aBcd0b", "aBcd0b"),
    ("nchw", "aBcd16e", "aBcd16e"),
])
def test_bad_tag(stag, dtag, bad):
    x = _values((2, 17, 3, 5))
    err = _expect_error(lambda: reorder.reorder(x, stag, dtag), re.escape(bad), x)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("shape,stag,dtag", [
    ((2, 17, 3), "nchw", "nChw16c"),
    ((2, 17, 3, 5, 1), "nchw", "nhwc"),
    ((2, 17, 3, 5), "ncw", "nCw16c"),
    ((2, 17, 3, 5), "nchw", "nCdhw16c"),
    ((2, 17, 3, 5), "nchw", "ncw"),
    ((17,), "nchw", "x"),
])
def test_tag_rank_differs_from_array_rank(shape, stag, dtag):
    x = _values(shape)
    _expect_error(lambda: reorder.reorder(x, stag, dtag), r"rank|ndim|dims|dimension|axes|"
                  + re.escape(stag) + "|" + re.escape(dtag), x)


def test_tag_must_be_a_string():
    x = _values((2, 3))
    _expect_error(lambda: reorder.reorder(x, 12, "ba"), r"tag|12|str", x)


# ------------------------------------------------------------------------- dims vs buffer

@pytest.mark.parametrize("dims", [(2, 33, 3, 5), (2, 17, 3, 6), (3, 17, 3, 5), (2, 17, 3), (2, 17, 3, 5, 2)])
def test_flat_blocked_source_dims_do_not_fit(dims):
    x = _nchw16c().reshape(-1)            # 2*2*3*5*16 = 960 elements
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=dims),
                  r"dims|size|shape|elements|" + "x".join(map(str, dims)), x)


@pytest.mark.parametrize("dims", [(2, 33, 3, 5), (2, 17, 3, 6), (2, 17, 4, 5)])
def test_physical_blocked_source_dims_inconsistent(dims):
    x = _nchw16c()                        # shape (2, 2, 3, 5, 16)
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=dims),
                  r"dims|size|shape|" + "x".join(map(str, dims)), x)


def test_plain_source_dims_inconsistent():
    x = _values((2, 3, 4, 5))
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", dims=(2, 3, 4, 6)), r"dims|shape", x)


@pytest.mark.parametrize("shape", [(2, 2, 3, 5, 15), (2, 2, 3, 5), (2, 1, 3, 5, 16), (959,), (961,),
                                   (2, 2, 3, 5, 8)])
def test_blocked_source_of_the_wrong_size(shape):
    x = _values(shape)
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=(2, 17, 3, 5)),
                  r"shape|size|dims|elements", x)


def test_blocked_source_wrong_block():
    x = ref_from_plain(_values((2, 17, 3, 5)), "abcd", "aBcd8b")     # (2, 3, 3, 5, 8)
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=(2, 17, 3, 5)),
                  r"shape|size|dims|elements", x)


@pytest.mark.parametrize("dims", [(-1, 3, 4, 4), (2, -16, 4, 4), (2, 3, 4, -5)])
def test_negative_dims_in_desc(dims):
    with pytest.raises(ValueError) as info:
        reorder.Desc(dims, np.float32, "nchw")
    assert re.search(r"dim|negative|-\d", str(info.value), re.IGNORECASE)


@pytest.mark.parametrize("kw", [{"dims": (2, 1.5, 4, 4)}, {"dims": ("2", 3, 4, 4)},
                                {"dims": (2, 3, 4, 4), "strides": (48, 16, 4, 1.0)},
                                {"dims": (2, 3, 4, 4), "strides": (48, 16, 4, 1), "offset0": 0.5}])
def test_sizes_that_are_not_integers(kw):
    """A float or a string where a size goes is refused, not truncated or parsed."""
    with pytest.raises(TypeError, match="integer"):
        reorder.Desc(dtype=np.float32, **kw)
    x = np.arange(96, dtype=np.float32)
    if "strides" not in kw:
        _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc", dims=kw["dims"]), "integer", x)


def test_negative_dims_in_reorder():
    x = _nchw16c().reshape(-1)
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=(2, -17, 3, 5)),
                  r"dim|negative|-17", x)


# ------------------------------------------------------------------------------------- out=

def test_out_wrong_dtype():
    x = _values((2, 17, 3, 5))
    out = _sentinel((2, 2, 3, 5, 16), np.float64)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", out=out), r"dtype|float64|f64|type", x, out)


def test_out_wrong_dtype_same_size():
    x = _values((2, 17, 3, 5))
    out = _sentinel((2, 2, 3, 5, 16), np.int32)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", out=out), r"dtype|int32|s32|type", x, out)


@pytest.mark.parametrize("shape", [(2, 2, 3, 5, 8), (2, 17, 3, 5), (960,), (2, 3, 5, 2, 16), (1, 2, 2, 3, 5, 16)])
def test_out_wrong_shape(shape):
    x = _values((2, 17, 3, 5))
    out = _sentinel(shape)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", out=out), r"shape", x, out)


def test_out_wrong_shape_plain():
    x = _values((2, 17, 3, 5))
    out = _sentinel((2, 17, 3, 5))                     # nchw shape, but dst is nhwc (2, 3, 5, 17)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc", out=out), r"shape", x, out)


def test_strided_destination_needs_its_array():
    """A destination with gaps or an offset (a sub-memory, a strided view) is written into
    the caller's out= only, so a call without one is refused and says so; reversed axes are
    refused outright, and a 4-bit destination, planned through a byte proxy, must be whole
    (the message names the caller's own Desc, not the proxy)."""
    dims = (2, 48, 3, 5)
    for dst in (reorder.Desc(dims, "s8", strides=(15 * 64, 1, 5 * 64, 64)),
                reorder.Desc(dims, "s8", strides=(720, 1, 240, 48), offset0=16)):
        p = reorder.plan(reorder.Desc(dims, "s8", "nChw16c"), dst)
        with pytest.raises(reorder.ReorderError, match="pass that array as out="):
            p(np.zeros((2, 3, 3, 5, 16), np.int8))
    with pytest.raises(reorder.ReorderError, match="negative strides"):
        reorder.plan(reorder.Desc(dims, "s8", "nChw16c"),
                     reorder.Desc(dims, "s8", strides=(720, -1, 240, 48)))
    x = np.zeros(dims, np.float32)
    gapped = (15 * 64, 1, 5 * 64, 64)
    with pytest.raises(reorder.ReorderError, match=r"destination must.*, s4, "):
        reorder.reorder(x, "nchw", reorder.Desc(dims, "s4", strides=gapped))
    with pytest.raises(reorder.ReorderError, match="pass that array as out="):
        reorder.quantize(x, "oihw", reorder.Desc(dims, "s8", strides=gapped), src_scales=0.1)


@pytest.mark.parametrize("make", [
    lambda: np.asfortranarray(_sentinel((2, 2, 3, 5, 16))),
    lambda: _sentinel((2, 4, 3, 5, 16))[:, ::2],
    lambda: _sentinel((2, 2, 3, 5, 16))[:, ::-1],
    lambda: _sentinel((2, 2, 3, 5, 32))[..., :16],
], ids=["fortran", "stepped", "negative", "sliced"])
def test_out_not_contiguous(make):
    x = _values((2, 17, 3, 5))
    out = make()
    assert out.shape == (2, 2, 3, 5, 16) and not out.flags.c_contiguous
    base = out.base if out.base is not None else out
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", out=out), r"contiguous", x, base)


def test_out_read_only():
    x = _values((2, 17, 3, 5))
    out = _sentinel((2, 2, 3, 5, 16))
    out.flags.writeable = False
    _expect_error(lambda: reorder.reorder(x, "nchw", "nChw16c", out=out), r"writ|read-only|readonly|read only",
                  x, out)


def test_out_is_x():
    x = _values((2, 3, 4, 5))
    _expect_error(lambda: reorder.reorder(x, "nchw", "nchw", out=x), r"overlap|share|alias|same memory|memory", x)


def test_out_is_a_view_of_x():
    x = _values((2, 3, 4, 5))
    out = x.reshape(2, 4, 5, 3)            # same bytes, C-contiguous, dst shape of nhwc
    _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc", out=out), r"overlap|share|alias|same memory|memory", x)


def test_out_partially_overlaps_x():
    big = _values((400,))
    x = big[:120].reshape(2, 3, 4, 5)
    out = big[60:180].reshape(2, 4, 5, 3)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc", out=out), r"overlap|share|alias|same memory|memory", big)


def test_out_overlaps_blocked_source():
    big = np.zeros(2 * 960, np.float32)
    big[:960] = _nchw16c().reshape(-1)
    x = big[:960]
    out = big[480:480 + 2 * 17 * 3 * 5].reshape(2, 17, 3, 5)
    _expect_error(lambda: reorder.reorder(x, "nChw16c", "nchw", dims=(2, 17, 3, 5), out=out),
                  r"overlap|share|alias|same memory|memory", big)


def test_out_not_an_array():
    x = _values((2, 3))
    _expect_error(lambda: reorder.reorder(x, "ab", "ba", out=[[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]),
                  r"out|array|ndarray", x)


# ----------------------------------------------------------------------------------- x itself

def test_object_array():
    x = np.empty((2, 3, 4, 5), dtype=object)
    x[...] = 1.5
    _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc"), r"dtype|object|type", x)


@pytest.mark.parametrize("dtype", ["<U2", "S2"])
def test_string_array(dtype):
    x = np.full((2, 3, 4, 5), "ab", dtype=dtype)
    _expect_error(lambda: reorder.reorder(x, "nchw", "nhwc"), r"dtype|<U|\|S|str|bytes|type", x)


def test_none():
    with pytest.raises((TypeError, ValueError)) as info:
        reorder.reorder(None, "nchw", "nhwc")
    assert re.search(r"none|array|x|input", str(info.value), re.IGNORECASE)


def test_scalar():
    with pytest.raises((TypeError, ValueError)):
        reorder.reorder(np.float32(1.0), "nchw", "nhwc")


def test_broadcast_zero_stride_not_written():
    """A zero-stride (broadcast) source is read-only; whatever happens it must not be modified."""
    row = _values((1, 17, 1, 1))
    x = np.broadcast_to(row, (2, 17, 3, 5))
    before = row.copy()
    try:
        reorder.reorder(x, "nchw", "nChw16c")
    except ValueError:
        pass
    assert np.array_equal(row, before)


def test_failed_call_leaves_later_calls_working():
    x = _values((2, 17, 3, 5))
    with pytest.raises((ValueError, TypeError)):
        reorder.reorder(x, "nchw", "nChw16c", out=_sentinel((2, 2, 3, 5, 8)))
    y = reorder.reorder(x, "nchw", "nChw16c")
    np.testing.assert_array_equal(y, ref_from_plain(x, "abcd", "aBcd16b"))


@pytest.mark.parametrize("dt", [np.int32, np.uint32])
def test_plan_source_of_another_dtype_same_size(dt):
    """A plan built for f32 reads float32 arrays only: int32 bits read as f32 would be a
    silent wrong answer (a conversion) or a float32 result holding integer bits (a move)."""
    x = np.arange(64, dtype=dt).reshape(1, 16, 2, 2)
    for kw in ({}, {"dtype": "s8"}):
        p = reorder.plan("nchw", "nChw16c", dims=x.shape, **kw)
        with pytest.raises(reorder.ReorderError,
                           match=f"array dtype {np.dtype(dt)} does not fit descriptor dtype f32"):
            p(x)
        with pytest.raises(reorder.ReorderError, match="does not fit descriptor dtype f32"):
            reorder.reorder(x, reorder.Desc(x.shape, "f32", "nchw"), "nChw16c", **kw)
    with pytest.raises(reorder.ReorderError, match="does not fit descriptor dtype f32"):
        reorder.quantize(x, reorder.Desc(x.shape, "f32", "oihw"), "OIhw4i16o4i")


def test_bf16_plan_takes_words_and_bfloat16():
    w = np.arange(64, dtype=np.uint16).reshape(1, 16, 2, 2) + 0x3f80
    p = reorder.plan("nchw", "nChw16c", dims=w.shape, src_dtype="bf16")
    got = p(w)
    np.testing.assert_array_equal(got.view(np.uint16), w.reshape(1, 1, 16, 4).transpose(0, 1, 3, 2)
                                  .reshape(got.shape))
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np.testing.assert_array_equal(p(w.view(ml_dtypes.bfloat16)).view(np.uint16),
                                  got.view(np.uint16))


def test_src_dtype_states_what_the_bytes_mean():
    """An explicit src_dtype= reads an array's bytes as that type (same size): int8 as u8,
    uint16 words as f16. Only a plan or Desc built for another dtype is refused."""
    x = np.arange(-16, 16, dtype=np.int8).reshape(1, 32, 1, 1)
    np.testing.assert_array_equal(reorder.reorder(x, "nchw", "nChw16c", src_dtype="u8"),
                                  reorder.reorder(x.view(np.uint8), "nchw", "nChw16c"))
    h = (np.arange(16, dtype=np.float16) / 4).reshape(1, 16, 1, 1)
    got = reorder.reorder(h.view(np.uint16), "nchw", "nChw16c", src_dtype="f16", dtype="f32")
    np.testing.assert_array_equal(got.reshape(-1), h.astype(np.float32).reshape(-1))
    q = reorder.quantize(x.view(np.uint8).reshape(2, 16, 1, 1), "oihw", "OIhw4i16o4i",
                         src_dtype="s8")
    np.testing.assert_array_equal(q.data, reorder.quantize(x.reshape(2, 16, 1, 1), "oihw",
                                                           "OIhw4i16o4i").data)
