"""``reorder.Desc``: every layout question, checked against the independent reference."""

import math
import zlib

import numpy as np
import pytest

import reorder
from reorder import Desc

from reorder.testing.reference import (
    blocking,
    offset as ref_offset,
    ref_matches,
    ref_nelems,
    ref_padded_dims,
    ref_physical_shape,
    ref_strides,
)
from spec_offsets import SPEC_OFFSETS

# (tag as the user writes it, abstract tag, dims)
CASES = [
    ("nchw", "abcd", (8, 30, 56, 56)),
    ("nhwc", "acdb", (2, 20, 5, 7)),
    ("nChw16c", "aBcd16b", (8, 30, 56, 56)),
    ("nChw16c", "aBcd16b", (2, 20, 5, 7)),
    ("nChw8c", "aBcd8b", (1, 3, 4, 4)),
    ("OIhw4i16o4i", "ABcd4b16a4b", (20, 10, 3, 3)),
    ("OIhw8i16o2i", "ABcd8b16a2b", (20, 10, 3, 3)),
    ("OIhw16i16o", "ABcd16b16a", (33, 17, 1, 1)),
    ("gOIhw4i16o4i", "aBCde4c16b4c", (2, 17, 3, 3, 3)),
    ("Goihw16g", "Abcde16a", (17, 1, 1, 3, 3)),
    ("AB16b16a2b", "AB16b16a2b", (16, 63)),
    ("AB32a32b8a4b", "AB32a32b8a4b", (100, 70)),
    ("BA16a64b4a", "BA16a64b4a", (70, 100)),
    ("aCB16b64c4b", "aCB16b64c4b", (2, 17, 65)),
    ("hwio", "cdba", (17, 3, 2, 5)),
    ("x", "a", (17,)),
    ("A16a", "A16a", (17,)),
    ("abcdef", "abcdef", (2, 1, 3, 1, 2, 2)),
    ("aBcdef16b", "aBcdef16b", (2, 17, 3, 1, 2, 2)),
    ("nChw16c", "aBcd16b", (2, 0, 3, 3)),
    ("nchw", "abcd", (0, 3, 2, 2)),
    ("ldOi32o", "abDc32d", (2, 1, 33, 5)),
]
IDS = [f"{t}-{'x'.join(map(str, d))}" for t, _, d in CASES]


@pytest.fixture(params=CASES, ids=IDS)
def case(request):
    tag, abstract, dims = request.param
    return Desc(dims, np.float32, tag), abstract, dims


def test_dims_and_ndim(case):
    d, abstract, dims = case
    assert tuple(d.dims) == dims
    assert d.ndim == len(dims)


def test_padded_dims(case):
    d, abstract, dims = case
    assert tuple(d.padded_dims) == ref_padded_dims(dims, abstract)


def test_strides(case):
    d, abstract, dims = case
    assert tuple(d.strides) == ref_strides(dims, abstract)


def test_physical_shape(case):
    d, abstract, dims = case
    assert tuple(d.physical_shape) == ref_physical_shape(dims, abstract)


def test_nelems_and_nbytes(case):
    d, abstract, dims = case
    n = ref_nelems(dims, abstract)
    assert d.nelems == n
    assert d.nbytes == n * 4
    assert math.prod(d.physical_shape) == n


def test_is_plain(case):
    d, abstract, dims = case
    assert d.is_plain == (not blocking(dims, abstract)["inner_blks"])


def test_tag_built_is_dense(case):
    d, _, _ = case
    assert d.is_dense


def test_offsets_random(case):
    d, abstract, dims = case
    if 0 in dims:  # no valid index: only the sizes can be checked
        assert d.nelems == 0
        return
    rng = np.random.default_rng(zlib.crc32(f"{abstract}{dims}".encode()))
    for _ in range(50):
        idx = tuple(int(rng.integers(0, n)) for n in dims)
        assert d.offset(*idx) == ref_offset(dims, abstract, idx), idx
    last = tuple(n - 1 for n in dims)
    assert d.offset(*last) == ref_offset(dims, abstract, last)
    assert d.offset(*(0,) * len(dims)) == 0


@pytest.mark.parametrize("tag,dims,shape", [
    ("nChw16c", (8, 30, 56, 56), (8, 2, 56, 56, 16)),
    ("OIhw4i16o4i", (20, 10, 3, 3), (2, 1, 3, 3, 4, 16, 4)),
    ("nhwc", (2, 3, 4, 5), (2, 4, 5, 3)),
])
def test_physical_shape_examples(tag, dims, shape):
    assert tuple(Desc(dims, np.float32, tag).physical_shape) == shape


@pytest.mark.parametrize("tag,dims,idx,expected", SPEC_OFFSETS)
def test_worked_offsets(tag, dims, idx, expected):
    assert Desc(dims, np.float32, tag).offset(*idx) == expected


def test_worked_padding():
    d = Desc((100, 70), np.float32, "AB32a32b8a4b")
    assert tuple(d.padded_dims) == (256, 128)


@pytest.mark.parametrize("dtype,size", [(np.int8, 1), (np.uint8, 1), (np.float16, 2), (np.uint16, 2),
                                        (np.float32, 4), (np.int32, 4), (np.float64, 8), (np.int64, 8),
                                        ("f32", 4), ("s8", 1), ("u8", 1), ("f16", 2), ("s32", 4)])
def test_nbytes_by_dtype(dtype, size):
    d = Desc((2, 20, 5, 7), dtype, "nChw16c")
    assert d.nbytes == 2 * 32 * 5 * 7 * size


def test_dtype_keyword_spelling():
    a = Desc(dims=(2, 3, 4, 5), dtype=np.float32, tag="nchw")
    b = Desc((2, 3, 4, 5), "f32", "nchw")
    assert a == b


def test_alias_and_abstract_are_equal_and_hash_equal():
    a = Desc((8, 30, 56, 56), np.float32, "nchw")
    b = Desc((8, 30, 56, 56), np.float32, "abcd")
    assert a == b
    assert hash(a) == hash(b)
    c = Desc((8, 30, 56, 56), np.float32, "nChw16c")
    e = Desc((8, 30, 56, 56), np.float32, "aBcd16b")
    assert c == e and hash(c) == hash(e)
    assert len({a, b, c, e}) == 2


@pytest.mark.parametrize("other", [
    ((8, 30, 56, 56), np.float32, "nhwc"),
    ((8, 30, 56, 56), np.int32, "nchw"),
    ((8, 30, 56, 55), np.float32, "nchw"),
    ((8, 30, 56, 56), np.float32, "nChw16c"),
])
def test_not_equal(other):
    a = Desc((8, 30, 56, 56), np.float32, "nchw")
    assert a != Desc(*other)


def test_usable_as_dict_key():
    table = {Desc((2, 3), np.float32, "ab"): 1}
    assert table[Desc((2, 3), np.float32, "nc")] == 1


@pytest.mark.parametrize("attr", ["dims", "dtype", "strides", "padded_dims"])
def test_immutable(attr):
    d = Desc((2, 3, 4, 5), np.float32, "nChw16c")
    before = repr(d)
    with pytest.raises((AttributeError, TypeError)):
        setattr(d, attr, (1, 1, 1, 1))
    assert repr(d) == before


def test_no_new_attributes():
    d = Desc((2, 3, 4, 5), np.float32, "nchw")
    with pytest.raises((AttributeError, TypeError)):
        d.something_new = 1


@pytest.mark.parametrize("make", [
    lambda: Desc((2, 3, 4, 5), np.float32, "nChw16c"),
    lambda: Desc(np.array([2, 3, 4, 5]), "f32", "nchw"),                 # numpy ints in
    lambda: Desc.of(np.zeros((2, 3, 4, 5), np.float32)[:, ::-1]),        # from an array
], ids=["tag", "numpy-dims", "of-array"])
@pytest.mark.parametrize("attr", ["dims", "strides", "padded_dims", "physical_shape"])
def test_shape_attributes_are_tuples_of_plain_ints(make, attr):
    """A Desc hands out tuples of Python ints: a list or an array here would let a caller
    change a descriptor (and the plan-cache key made from it) in place, and numpy ints
    would leak into shapes and hashes. Writing into the tuple fails and changes nothing."""
    d = make()
    v = getattr(d, attr)
    assert type(v) is tuple and all(type(i) is int for i in v), (attr, v)
    h = hash(d)
    with pytest.raises(TypeError):
        v[0] = 7
    assert getattr(d, attr) == v and hash(d) == h


def test_repr():
    d = Desc((8, 30, 56, 56), np.float32, "nChw16c")
    r = repr(d)
    assert "8x30x56x56" in r
    assert "nChw16c" in r
    assert "aBcd16b" in r
    assert ("f32" in r) or ("float32" in r)


def test_repr_from_abstract_shows_abstract():
    r = repr(Desc((20, 10, 3, 3), np.int8, "ABcd4b16a4b"))
    assert "ABcd4b16a4b" in r and "20x10x3x3" in r
    assert ("s8" in r) or ("int8" in r)


@pytest.mark.parametrize("tag,dims", [("nChw16c", (2, 20, 5, 7)), ("nchw", (2, 3, 4, 5)),
                                      ("OIhw4i16o4i", (20, 10, 3, 3)), ("x", (5,))])
def test_explain(tag, dims):
    text = Desc(dims, np.float32, tag).explain()
    assert isinstance(text, str) and text.strip()


# ----------------------------------------------------------------------------------- Desc.of

@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64, np.uint16])
def test_of_contiguous(dtype):
    x = np.zeros((2, 3, 4, 5), dtype)
    d = Desc.of(x)
    assert tuple(d.dims) == (2, 3, 4, 5)
    assert tuple(d.strides) == (60, 20, 5, 1)
    assert d.is_plain
    assert d.is_dense
    assert d.nbytes == x.nbytes
    assert d == Desc((2, 3, 4, 5), dtype, "abcd")


def _elem_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


@pytest.mark.parametrize("make", [
    lambda b: b.transpose(0, 2, 3, 1),
    lambda b: b[:, ::2],
    lambda b: b[:, ::-1],
    lambda b: b[1:, 2:],
    lambda b: b[::-1, :, ::2, 1:],
], ids=["transpose", "step", "negative", "offset", "mixed"])
def test_of_views(make):
    base = np.arange(3 * 6 * 4 * 5, dtype=np.float32).reshape(3, 6, 4, 5)
    x = make(base)
    d = Desc.of(x)
    assert tuple(d.dims) == x.shape
    assert tuple(d.strides) == _elem_strides(x)
    assert d.is_plain
    # element (i) lives at offset(i) elements from element (0, ..., 0)
    idx = tuple(n - 1 for n in x.shape)
    assert d.offset(*idx) - d.offset(*(0,) * x.ndim) == sum(i * s for i, s in zip(idx, _elem_strides(x)))


def test_of_transposed_is_dense_permutation():
    x = np.zeros((2, 3, 4, 5), np.float32).transpose(0, 2, 3, 1)   # an nchw buffer seen as (n,h,w,c)
    d = Desc.of(x)
    assert d.is_dense
    assert not Desc.of(np.zeros((4, 6), np.float32)[:, ::2]).is_dense


# ----------------------------------------------------------------------------- explicit strides

def test_explicit_strides_and_offset0():
    d = Desc((2, 3, 4), np.float32, strides=(40, 12, 2), offset0=5)
    assert tuple(d.strides) == (40, 12, 2)
    assert d.is_plain
    assert not d.is_dense
    for idx in [(0, 0, 0), (1, 2, 3), (1, 0, 2)]:
        assert d.offset(*idx) == 5 + idx[0] * 40 + idx[1] * 12 + idx[2] * 2


def test_explicit_dense_strides_equal_tag():
    d = Desc((2, 3, 4, 5), np.float32, strides=(60, 1, 15, 3))
    assert d.is_dense
    assert d == Desc((2, 3, 4, 5), np.float32, "nhwc")
    assert d.matches("nhwc")


# ------------------------------------------------------------------------------------- matches

# (dims, desc tag, queried tag, expected) -- spec 1.6: strides of size-1 dims (dims==padded==1) are free
MATCHES = [
    ((1, 16, 4, 4), "aBcd16b", "aBcd16b", True),
    ((1, 16, 4, 4), "aBcd16b", "nChw16c", True),
    ((1, 16, 4, 4), "aBcd16b", "Bcda16b", True),     # only N's stride differs, and N == 1
    ((1, 16, 4, 4), "aBcd16b", "nchw", False),
    ((1, 16, 4, 4), "aBcd16b", "aBcd8b", False),
    ((1, 16, 4, 4), "aBcd16b", "acdB16b", False),    # C's stride differs and C != 1
    ((8, 1, 5, 5), "nchw", "nhwc", True),             # C is 1
    ((8, 1, 5, 5), "nchw", "nchw", True),
    ((8, 2, 5, 5), "nchw", "nhwc", False),
    ((8, 1, 5, 5), "nchw", "nChw16c", False),
    ((1, 1), "ab", "ba", True),
    ((20, 10, 3, 3), "OIhw4i16o4i", "ABcd4b16a4b", True),
    ((20, 10, 3, 3), "OIhw4i16o4i", "OIhw8i16o2i", False),
]
_ABSTRACT = {"nChw16c": "aBcd16b", "nchw": "abcd", "nhwc": "acdb", "OIhw4i16o4i": "ABcd4b16a4b",
             "OIhw8i16o2i": "ABcd8b16a2b"}


@pytest.mark.parametrize("dims,tag,other,expected", MATCHES,
                         ids=[f"{'x'.join(map(str, d))}-{t}-{o}" for d, t, o, _ in MATCHES])
def test_matches(dims, tag, other, expected):
    a = _ABSTRACT.get(tag, tag)
    b = _ABSTRACT.get(other, other)
    assert ref_matches(dims, a, b) == expected  # the table itself, against the reference
    assert Desc(dims, np.float32, tag).matches(other) == expected


def test_of_matches_tag():
    x = np.zeros((2, 3, 4, 5), np.float32).transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2)
    # x is an nchw-shaped view of an nhwc buffer
    assert Desc.of(x).matches("nhwc")
    assert not Desc.of(x).matches("nchw")


# --------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("dims", [(-1, 3, 4, 4), (2, -16, 4, 4)])
def test_negative_dims(dims):
    with pytest.raises(ValueError) as info:
        Desc(dims, np.float32, "nchw")
    assert "-1" in str(info.value) or "-16" in str(info.value) or "dim" in str(info.value).lower()


def test_ndims_limit():
    with pytest.raises(ValueError):
        Desc((1,) * 13, np.float32, strides=(1,) * 13)


def test_twelve_dims_ok():
    d = Desc((1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2), np.float32, "abcdefghijkl")
    assert d.nelems == 64
    assert tuple(d.strides) == ref_strides(d.dims, "abcdefghijkl")


def test_reorder_namespace():
    assert reorder.Desc is Desc
