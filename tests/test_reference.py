"""The spec's worked examples (layout spec 1.4) against the independent reference.

These tests do not need the library: they check the yardstick itself.
"""

import numpy as np
import pytest

from reorder.testing.reference import (
    RefTagError,
    blocking,
    offset,
    parse_tag,
    ref_from_plain,
    ref_matches,
    ref_nelems,
    ref_padded_dims,
    ref_physical_shape,
    ref_reorder,
    ref_strides,
    ref_to_plain,
)

# (tag, dims, index, offset) -- spec 1.4, verified there against libdnnl 3.2
WORKED_OFFSETS = [
    ("aBcd16b", (2, 20, 5, 7), (1, 19, 2, 3), 1955),          # nChw16c
    ("ABcd4b16a4b", (20, 10, 3, 3), (17, 9, 1, 2), 3717),     # OIhw4i16o4i
    ("ABcd8b16a2b", (20, 10, 3, 3), (17, 9, 1, 2), 3715),     # OIhw8i16o2i
    ("AB16b16a2b", (16, 63), (5, 37), 587),
    ("AB32a32b8a4b", (100, 70), (45, 57), 5589),
    ("acdb", (2, 20, 5, 7), (1, 19, 2, 3), 1059),             # nhwc
]

# (tag, dims, padded_dims, strides) -- spec 1.4
WORKED_BLOCKING = [
    ("aBcd16b", (2, 20, 5, 7), (2, 32, 5, 7), (1120, 560, 112, 16)),
    ("ABcd4b16a4b", (20, 10, 3, 3), (32, 16, 3, 3), (2304, 2304, 768, 256)),
    ("AB16b16a2b", (16, 63), (16, 64), (1024, 512)),
    ("AB32a32b8a4b", (100, 70), (256, 128), None),
    ("acdb", (2, 20, 5, 7), (2, 20, 5, 7), (700, 1, 140, 20)),
]


@pytest.mark.parametrize("tag,dims,idx,expected", WORKED_OFFSETS,
                         ids=[f"{t}-{'x'.join(map(str, d))}" for t, d, _, _ in WORKED_OFFSETS])
def test_worked_offset(tag, dims, idx, expected):
    assert offset(dims, tag, idx) == expected


@pytest.mark.parametrize("tag,dims,padded,strides", WORKED_BLOCKING,
                         ids=[t for t, *_ in WORKED_BLOCKING])
def test_worked_blocking(tag, dims, padded, strides):
    assert ref_padded_dims(dims, tag) == padded
    if strides is not None:
        assert ref_strides(dims, tag) == strides


def test_nchw16c_size():
    # The spec quotes "size 8960": that is bytes for f32 (2*32*5*7 = 2240 elements * 4 bytes).
    assert ref_nelems((2, 20, 5, 7), "aBcd16b") == 2240
    assert ref_nelems((2, 20, 5, 7), "aBcd16b") * np.dtype(np.float32).itemsize == 8960


def test_blocks_parsed_outermost_first():
    b = blocking((20, 10, 3, 3), "ABcd4b16a4b")
    assert b["inner_blks"] == [4, 16, 4]
    assert b["inner_idxs"] == [1, 0, 1]
    assert b["B"] == 256


@pytest.mark.parametrize("tag,dims,shape", [
    ("aBcd16b", (8, 30, 56, 56), (8, 2, 56, 56, 16)),
    ("ABcd4b16a4b", (20, 10, 3, 3), (2, 1, 3, 3, 4, 16, 4)),
    ("acdb", (2, 3, 4, 5), (2, 4, 5, 3)),
    ("BA16a64b4a", (70, 100), (2, 2, 16, 64, 4)),
    ("a", (0,), (0,)),
])
def test_physical_shape(tag, dims, shape):
    assert ref_physical_shape(dims, tag) == shape


def test_zero_sized_dim_keeps_running_stride():
    # spec 1.3: a zero-sized dim leaves the running stride unchanged
    assert ref_strides((2, 0, 3), "abc") == (3, 3, 1)


def test_plain_reorder_is_a_transpose():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    got = ref_from_plain(x, "abcd", "acdb")
    np.testing.assert_array_equal(got, x.transpose(0, 2, 3, 1))


def test_nchw16c_matches_numpy_construction():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 20, 3, 4)).astype(np.float32)
    padded = np.zeros((2, 32, 3, 4), np.float32)
    padded[:, :20] = x
    expected = padded.reshape(2, 2, 16, 3, 4).transpose(0, 1, 3, 4, 2)
    got = ref_from_plain(x, "abcd", "aBcd16b")
    assert got.shape == (2, 2, 3, 4, 16)
    np.testing.assert_array_equal(got, expected)


def test_double_block_matches_numpy_construction():
    # OIhw4i16o4i: o = O*16 + o16, i = I*16 + i4a*4 + i4b; physical (O, I, h, w, i4a, o16, i4b)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((20, 10, 3, 3)).astype(np.float32)
    padded = np.zeros((32, 16, 3, 3), np.float32)
    padded[:20, :10] = w
    expected = padded.reshape(2, 16, 1, 4, 4, 3, 3).transpose(0, 2, 5, 6, 3, 1, 4)
    got = ref_from_plain(w, "abcd", "ABcd4b16a4b")
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("tag", ["aBcd16b", "ABcd4b16a4b", "ABcd16a16b",
                                 "cdba", "BAcd16a16b"])
def test_round_trip_and_padding_zero(tag):
    rng = np.random.default_rng(2)
    dims = (3, 17, 2, 5)
    x = rng.integers(1, 100, size=dims).astype(np.int32)
    blocked = ref_from_plain(x, "abcd", tag)
    assert (blocked != 0).sum() == x.size          # every padded position is 0
    back = ref_to_plain(blocked, dims, tag, "abcd")
    np.testing.assert_array_equal(back, x)


def test_reorder_is_bit_exact_for_nan_payloads():
    bits = np.array([0x7FC00001, 0xFFFFFFFF, 0x7F800001, 0x00000001], dtype=np.uint32)
    src = bits.view(np.float32)
    out = ref_reorder(src, (2, 2), "ab", "ba")
    np.testing.assert_array_equal(out.view(np.uint32), bits[[0, 2, 1, 3]])


def test_matches_size_one_rule():
    assert ref_matches((8, 1, 5, 5), "abcd", "acdb")
    assert not ref_matches((8, 2, 5, 5), "abcd", "acdb")
    assert ref_matches((1, 16, 4, 4), "aBcd16b", "Bcda16b")
    assert not ref_matches((1, 16, 4, 4), "aBcd16b", "abcd")


@pytest.mark.parametrize("bad", ["", "abcb", "abd", "aBcd", "abcd16b", "aBcd0b", "aBcd16e",
                                 "aBcd16", "nchw"])
def test_reference_parser_rejects(bad):
    with pytest.raises(RefTagError):
        parse_tag(bad)
