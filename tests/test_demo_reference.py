"""reorder/testing/reference.py, the check behind the tests', the demo's and bench's "bit for
bit", against offsets, shapes and arrays written out by hand from the layout spec (§1.3, §1.4,
§2.3, §2.4), its spellings (aliases, x meta-tags, TVM) against its abstract tags. It must not lean on the package's tag parser or
descriptors: a bug there would otherwise pass the demo's check unnoticed."""
import ast
import pathlib

import numpy as np
import pytest

from reorder.testing import reference as demo_ref

from reorder.testing import reference as suite_ref
from spec_offsets import SPEC_OFFSETS


def test_imports_nothing_from_the_package():
    tree = ast.parse(pathlib.Path(demo_ref.__file__).read_text())
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert imported and all(m in ("math", "numpy") for m in imported), imported


# (tag, dims, logical index, element offset): spec §1.4's, then more computed by hand
HAND_OFFSETS = SPEC_OFFSETS + [
    # by hand here: nchw 2x3x4x5, (1, 2, 3, 4) -> 60 + 40 + 15 + 4
    ("nchw", (2, 3, 4, 5), (1, 2, 3, 4), 119),
    # hwio 2x3x4x5 (o, i, h, w): strides o=1, i=2, h=30, w=6; (1, 2, 3, 4) -> 1 + 4 + 90 + 24
    ("hwio", (2, 3, 4, 5), (1, 2, 3, 4), 119),
    # Goihw16g 17x1x1x3x3: G padded to 32, B=16; g=16 -> outer g 1 * 144, lane 0; h=2, w=1 -> 96+16
    ("Goihw16g", (17, 1, 1, 3, 3), (16, 0, 0, 2, 1), 144 + 96 + 16),
    # TVM NCHW16c is nChw16c
    ("NCHW16c", (2, 20, 5, 7), (1, 19, 2, 3), 1955),
    # aBx16b at 4 dims is aBcd16b
    ("aBx16b", (2, 20, 5, 7), (1, 19, 2, 3), 1955),
]


@pytest.mark.parametrize("tag,dims,idx,off", HAND_OFFSETS, ids=[t for t, *_ in HAND_OFFSETS])
def test_offsets_by_hand(tag, dims, idx, off):
    flat = np.ravel_multi_index(idx, dims)
    assert demo_ref.offsets(dims, tag)[flat] == off


# spec §2.3/§2.4: aliases, meta-tags and TVM strings to abstract tags
HAND_TAGS = [
    ("x", 1, "a"), ("nc", 2, "ab"), ("cn", 2, "ba"), ("io", 2, "ba"), ("tnc", 3, "abc"),
    ("ntc", 3, "bac"), ("wio", 3, "cba"), ("nchw", 4, "abcd"), ("nhwc", 4, "acdb"),
    ("chwn", 4, "bcda"), ("hwio", 4, "cdba"), ("iohw", 4, "bacd"), ("wigo", 4, "dcab"),
    ("hwigo", 5, "decab"), ("ldgoi", 5, "abdec"), ("dhwigo", 6, "defcab"),
    ("nChw16c", 4, "aBcd16b"), ("NChw16n16c", 4, "ABcd16a16b"), ("IOhw16o16i", 4, "BAcd16a16b"),
    ("OhwI16o4i", 4, "AcdB16a4b"), ("OIhw4i16o4i", 4, "ABcd4b16a4b"),
    ("gOIhw4i16o4i", 5, "aBCde4c16b4c"), ("gOhwi16o", 5, "aBdec16b"), ("Goihw16g", 5, "Abcde16a"),
    ("Goiw16g", 4, "Abcd16a"), ("ldOi32o", 4, "abDc32d"), ("aBcd16b", 4, "aBcd16b"),
    ("BA16a64b4a", 2, "BA16a64b4a"), ("aBx16b", 4, "aBcd16b"), ("xba", 4, "cdba"),
    ("aBCx4c16b4c", 5, "aBCde4c16b4c"), ("ABx4b16a4b", 2, "AB4b16a4b"),
    ("NCHW16c", 4, "aBcd16b"), ("OIHW16i16o", 4, "ABcd16b16a"), ("NHWC4c", 4, "acdB4b"),
]


@pytest.mark.parametrize("tag,ndims,abstract", HAND_TAGS, ids=[t for t, *_ in HAND_TAGS])
def test_tag_spellings_by_hand(tag, ndims, abstract):
    assert demo_ref.abstract_tag(tag, ndims) == abstract


@pytest.mark.parametrize("tag,ndims", [("OIHW[4o4i]", 4), ("nchw", 3), ("abce", 4), ("nChw16q", 4)])
def test_tags_it_cannot_read_are_errors(tag, ndims):
    with pytest.raises(ValueError, match="reference"):
        demo_ref.abstract_tag(tag, ndims)


@pytest.mark.parametrize("tag,dims,shape", [
    ("nChw16c", (8, 30, 56, 56), (8, 2, 56, 56, 16)),
    ("OIhw4i16o4i", (200, 120, 3, 3), (13, 8, 3, 3, 4, 16, 4)),
    ("AB32a32b8a4b", (100, 70), (1, 1, 32, 32, 8, 4)),
    ("nhwc", (2, 3, 4, 5), (2, 4, 5, 3)),
    ("nChw16c", (2, 0, 3, 3), (2, 0, 3, 3, 16)),
])
def test_physical_shapes_by_hand(tag, dims, shape):
    assert demo_ref.physical_shape(dims, tag) == shape


def test_small_reorder_by_hand():
    """nchw 1x3x1x2 -> nChw4c: (1, 1, 1, 2, 4), c in the lanes, lane 3 zero."""
    x = np.array([1, 2, 3, 4, 5, 6], np.float32).reshape(1, 3, 1, 2)   # c0: 1 2, c1: 3 4, c2: 5 6
    got = demo_ref.reference_reorder(x, (1, 3, 1, 2), "nchw", "nChw4c")
    assert got.shape == (1, 1, 1, 2, 4)
    assert got.reshape(2, 4).tolist() == [[1, 3, 5, 0], [2, 4, 6, 0]]
    back = demo_ref.reference_reorder(got, (1, 3, 1, 2), "nChw4c", "nchw")
    assert back.shape == (1, 3, 1, 2) and back.tolist() == x.tolist()


def test_from_logical_moves_bits():
    nan = np.array([0x7FC00001, 0xFF800000, 0x80000000], np.uint32).view(np.float32)
    got = demo_ref.from_logical(nan.reshape(1, 3), "BA4a")              # (1, 3) padded to (4, 3)
    assert got.shape == (3, 1, 4)
    assert got.view(np.uint32)[:, 0, 0].tolist() == [0x7FC00001, 0xFF800000, 0x80000000]
    assert not got.view(np.uint32)[:, 0, 1:].any()


@pytest.mark.parametrize("stag,sabs,dtag,dabs,dims", [
    ("nchw", "abcd", "nChw16c", "aBcd16b", (2, 30, 5, 3)),
    ("oihw", "abcd", "OIhw4i16o4i", "ABcd4b16a4b", (20, 10, 3, 3)),
    ("OIhw4i16o4i", "ABcd4b16a4b", "OIhw16i16o", "ABcd16b16a", (35, 21, 1, 2)),
    ("goihw", "abcde", "gOIhw2i8o4i", "aBCde2c8b4c", (2, 9, 13, 1, 3)),
    ("ab", "ab", "AB32a32b8a4b", "AB32a32b8a4b", (33, 70)),
])
def test_spellings_agree_with_their_abstract_tags(stag, sabs, dtag, dabs, dims):
    # the scatter through a spelling's offsets and the gather of the abstract-tag level
    rng = np.random.default_rng(0)
    logical = rng.integers(1, 1 << 30, dims).astype(np.int32)
    x = demo_ref.from_logical(logical, stag)
    np.testing.assert_array_equal(x, suite_ref.ref_from_plain(logical, "abcdefghijkl"[:len(dims)], sabs))
    got = demo_ref.reference_reorder(x, dims, stag, dtag)
    exp = suite_ref.ref_reorder(x.reshape(-1), dims, sabs, dabs).reshape(suite_ref.ref_physical_shape(dims, dabs))
    assert got.shape == exp.shape
    np.testing.assert_array_equal(got, exp)


def test_demo_check_rejects_a_wrong_byte_or_shape():
    from reorder.__main__ import _matches_reference
    dims = (2, 17, 3, 5)
    x = demo_ref.from_logical(np.arange(np.prod(dims), dtype=np.float32).reshape(dims), "nchw")
    good = demo_ref.reference_reorder(x, dims, "nchw", "nChw16c")
    assert _matches_reference(good.copy(), x, dims, "nchw", "nChw16c")
    bad = good.copy()
    bad[1, 1, 2, 4, 15] = 1.0                      # a padding lane written
    assert not _matches_reference(bad, x, dims, "nchw", "nChw16c")
    assert not _matches_reference(good.reshape(2, 2, 15, 16), x, dims, "nchw", "nChw16c")
