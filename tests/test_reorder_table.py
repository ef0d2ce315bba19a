"""The big table: ``reorder.reorder`` against the independent reference, bit for bit.

Layout of the tables (like benchdnn batch files):

* ``DST_TAGS``: every tag in the suite, written as a user writes it (alias, abstract or meta),
  next to its abstract form (the spelling the reference understands).
* ``SHAPES``: awkward shapes per rank (not divisible by any block, size-1 and zero-size dims).
* ``DTYPES``: every element size (1, 2, 4, 8 bytes), signed/unsigned/float.

Cross products are kept affordable: every tag x every shape in f32; every tag x every dtype on
one awkward shape; threads {1, 2} on a subset.  Every destination is pre-filled with a sentinel
(0xAB bytes, or NaN for floats), so unwritten padding shows.
"""

import json
import math
import pathlib

import numpy as np
import pytest

import reorder

from reorder.testing.reference import (
    blocking,
    ref_from_plain,
    ref_physical_shape,
    ref_reorder,
)

# ------------------------------------------------------------------------------------ tables

# (tag as written by a user, abstract tag)
DST_TAGS = [
    # 1-D
    ("x", "a"),
    ("A16a", "A16a"),
    ("A4a", "A4a"),
    # 2-D
    ("nc", "ab"),
    ("io", "ba"),
    ("AB16b16a2b", "AB16b16a2b"),
    ("AB32a32b8a4b", "AB32a32b8a4b"),
    ("BA16a64b4a", "BA16a64b4a"),
    ("BA16a32b2a", "BA16a32b2a"),
    ("OI4i16o4i", "AB4b16a4b"),
    ("AB8a8b", "AB8a8b"),
    ("BA4b8a16b2a", "BA4b8a16b2a"),
    # 3-D
    ("ncw", "abc"),
    ("nwc", "acb"),
    ("nCw8c", "aBc8b"),
    ("nCw16c", "aBc16b"),
    ("aBc32b", "aBc32b"),
    ("aBc4b", "aBc4b"),
    ("NCw16n16c", "ABc16a16b"),
    ("OIw4i16o4i", "ABc4b16a4b"),
    ("aCB16b64c4b", "aCB16b64c4b"),
    ("aCB16b32c2b", "aCB16b32c2b"),
    ("cBa16b", "cBa16b"),
    # 4-D
    ("nchw", "abcd"),
    ("nhwc", "acdb"),
    ("chwn", "bcda"),
    ("hwio", "cdba"),
    ("iohw", "bacd"),
    ("nChw4c", "aBcd4b"),
    ("nChw8c", "aBcd8b"),
    ("nChw16c", "aBcd16b"),
    ("nChw32c", "aBcd32b"),
    ("NChw16n16c", "ABcd16a16b"),
    ("NChw32n32c", "ABcd32a32b"),
    ("OIhw16i16o", "ABcd16b16a"),
    ("OIhw16o16i", "ABcd16a16b"),
    ("OIhw4i16o4i", "ABcd4b16a4b"),
    ("OIhw8i16o2i", "ABcd8b16a2b"),
    ("OIhw8o16i2o", "ABcd8a16b2a"),
    ("IOhw16o16i", "BAcd16a16b"),
    ("OIhw4i4o", "ABcd4b4a"),
    ("OIhw8i8o", "ABcd8b8a"),
    ("OIhw16i16o4i", "ABcd16b16a4b"),
    ("OhwI16o4i", "AcdB16a4b"),
    ("Ohwi16o", "Acdb16a"),
    ("Goiw16g", "Abcd16a"),
    ("ldOi32o", "abDc32d"),
    ("acBd4b", "acBd4b"),
    ("Acdb4a", "Acdb4a"),
    ("ABcd4a8b8a4b", "ABcd4a8b8a4b"),
    ("aBx16b", "aBcd16b"),
    # 5-D
    ("ncdhw", "abcde"),
    ("ndhwc", "acdeb"),
    ("nCdhw16c", "aBcde16b"),
    ("hwigo", "decab"),
    ("gOIhw16i16o", "aBCde16c16b"),
    ("gOIhw4i16o4i", "aBCde4c16b4c"),
    ("gOIhw2i8o4i", "aBCde2c8b4c"),
    ("gOIhw4o4i", "aBCde4b4c"),
    ("gOIhw8i16o2i", "aBCde8c16b2c"),
    ("gOhwi16o", "aBdec16b"),
    ("Goihw16g", "Abcde16a"),
    ("Goihw8g", "Abcde8a"),
    ("OIdhw4i16o4i", "ABcde4b16a4b"),
    # 6-D
    ("goidhw", "abcdef"),
    ("dhwigo", "defcab"),
    ("aBcdef16b", "aBcdef16b"),
    ("Goidhw16g", "Abcdef16a"),
    ("gOIdhw4i16o4i", "aBCdef4c16b4c"),
]
ABSTRACT = dict(DST_TAGS)

SHAPES = {
    1: [(1,), (3,), (17,), (33,), (0,), (64,)],
    2: [(1, 1), (3, 17), (17, 33), (33, 1), (0, 5), (5, 0), (64, 64), (100, 70)],
    3: [(1, 1, 1), (2, 17, 5), (3, 33, 1), (1, 3, 7), (17, 1, 2), (0, 3, 2), (2, 0, 3), (16, 64, 2)],
    4: [(1, 1, 1, 1), (2, 17, 3, 5), (3, 33, 2, 1), (17, 3, 3, 3), (1, 1, 5, 4), (0, 3, 2, 2),
        (2, 0, 3, 3), (2, 3, 0, 1), (16, 32, 2, 2)],
    5: [(1, 1, 1, 1, 1), (2, 17, 3, 2, 3), (3, 3, 17, 1, 2), (17, 1, 33, 1, 1), (0, 2, 2, 2, 2),
        (2, 3, 0, 2, 2), (16, 16, 16, 1, 1)],
    6: [(1, 1, 1, 1, 1, 1), (2, 3, 17, 1, 2, 2), (2, 17, 3, 1, 1, 2), (17, 2, 1, 2, 1, 1),
        (2, 0, 3, 1, 1, 1), (1, 33, 1, 2, 1, 1)],
}
ONE_SHAPE = {1: (17,), 2: (17, 33), 3: (3, 17, 5), 4: (3, 17, 2, 3), 5: (2, 17, 3, 2, 3),
             6: (2, 3, 17, 1, 2, 2)}

DTYPES = [np.int8, np.uint8, np.float16, np.uint16, np.float32, np.int32, np.float64, np.int64]
ONE_PER_SIZE = [np.int8, np.float16, np.float32, np.int64]

THREAD_TAGS = ["nChw16c", "nChw8c", "nhwc", "OIhw4i16o4i", "OIhw16i16o", "gOIhw4i16o4i", "Goihw16g",
               "AB32a32b8a4b", "BA16a64b4a", "aBcdef16b", "A16a", "nCdhw16c"]


def plain_tag(ndims):
    return "abcdefghijkl"[:ndims]


def tid(v):
    if isinstance(v, tuple):
        return "x".join(map(str, v)) if v else "scalar"
    if isinstance(v, type) or isinstance(v, np.dtype):
        return np.dtype(v).name
    return str(v)


# ----------------------------------------------------------------------------------- helpers

def make_values(shape, dtype, seed=0):
    """Non-zero values (zero marks padding), full-range for ints, with -0.0 and inf for floats."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dtype)
        v[v == 0] = 1
    else:
        v = (rng.standard_normal(n) * 100).astype(dtype)
        v[v == 0] = 1
        if n >= 4:
            v[1] = -0.0
            v[n // 2] = np.inf
            v[-1] = -np.inf
    return v.reshape(shape)


def sentinel(shape, dtype):
    out = np.empty(shape, dtype)
    if out.dtype.kind == "f":
        out.fill(np.nan)
    else:
        out.view(np.uint8).fill(0xAB)
    return out


GUARD = 64  # elements of canary on each side of an out= buffer


def guarded_sentinel(shape, dtype):
    """(out, buf): ``out`` is a C-contiguous sentinel-filled array inside ``buf``, which has
    GUARD canary elements before and after it, so writes out of bounds show."""
    n = math.prod(shape)
    buf = sentinel((n + 2 * GUARD,), dtype)
    return buf[GUARD:GUARD + n].reshape(shape), buf


def assert_guards_intact(buf, what=""):
    ref = sentinel((GUARD,), buf.dtype).view(np.uint8)
    assert np.array_equal(buf[:GUARD].view(np.uint8), ref), f"{what}: write before the start of out"
    assert np.array_equal(buf[-GUARD:].view(np.uint8), ref), f"{what}: write past the end of out"


def assert_bits_equal(got, expected, what=""):
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(-1, got.dtype.itemsize)
    e = np.ascontiguousarray(expected).reshape(-1).view(np.uint8).reshape(-1, got.dtype.itemsize)
    bad = np.nonzero((g != e).any(axis=1))[0]
    if bad.size:
        first = np.unravel_index(bad[0], got.shape) if got.shape else ()
        raise AssertionError(
            f"{what}: {bad.size} of {g.shape[0]} elements differ; first at physical index "
            f"{tuple(int(i) for i in first)}: got {got.reshape(-1)[bad[0]]!r}, "
            f"expected {expected.reshape(-1)[bad[0]]!r}")


def logical_dims(x_shape, plain_abstract):
    order = blocking((1,) * len(plain_abstract), plain_abstract)["order"]
    dims = [0] * len(order)
    for k, d in enumerate(order):
        dims[d] = x_shape[k]
    return tuple(dims)


def run_and_check(x, stag, dtag, dims, *, threads=None, use_out=True, pass_dims=True, what=""):
    """Reorder ``x`` (stag -> dtag, user spellings) and compare with the reference bit for bit.

    The reference input is x's logical content: C-order over x's own axes (the physical axes of
    stag).  The source must be unchanged afterwards.
    """
    sabs, dabs = ABSTRACT.get(stag, stag), ABSTRACT.get(dtag, dtag)
    before = np.array(x, copy=True)
    src_flat = np.ascontiguousarray(x).reshape(-1)
    expected = ref_reorder(src_flat, dims, sabs, dabs).reshape(ref_physical_shape(dims, dabs))
    kwargs = {}
    if pass_dims:
        kwargs["dims"] = dims
    if threads is not None:
        kwargs["threads"] = threads
    if use_out:
        out, buf = guarded_sentinel(expected.shape, x.dtype)
        assert out.flags.c_contiguous
        res = reorder.reorder(x, stag, dtag, out=out, **kwargs)
        assert res is out, f"{what}: out= was not returned"
        assert_guards_intact(buf, what or f"{stag}->{dtag} {dims}")
    else:
        res = reorder.reorder(x, stag, dtag, **kwargs)
        assert isinstance(res, np.ndarray)
        assert res.flags.c_contiguous and res.flags.writeable
        assert not np.shares_memory(res, x)
    assert res.dtype == x.dtype
    assert res.shape == expected.shape, f"{what}: shape {res.shape}, expected {expected.shape}"
    assert_bits_equal(res, expected, what or f"{stag}->{dtag} {dims} {x.dtype}")
    assert_bits_equal(x, before, f"{what}: the source was modified")
    return res


def plain_source(dims, dtype, seed=0):
    """Logical (abc...) array of ``dims``."""
    return make_values(tuple(dims), dtype, seed)


def blocked_source(dims, tag, dtype, seed=0):
    """A C-contiguous array in ``tag``'s physical shape holding random data, zero padding."""
    abs_ = ABSTRACT.get(tag, tag)
    plain = plain_source(dims, dtype, seed)
    return ref_from_plain(plain, plain_tag(len(dims)), abs_)


def _ndims(abstract):
    """Rank of an abstract tag: its letters that are not block letters."""
    return sum(1 for i, c in enumerate(abstract) if c.isalpha() and (i == 0 or not abstract[i - 1].isdigit()))


def _rr(x, stag, dtag, dims, **kw):
    """reorder, passing dims= only for a blocked source."""
    if blocking(dims, ABSTRACT.get(stag, stag))["inner_blks"]:
        kw["dims"] = dims
    return reorder.reorder(x, stag, dtag, **kw)


def _shape_cases(tags):
    return [(t, s) for t in tags for s in SHAPES[_ndims(ABSTRACT.get(t, t))]]


ALL_TAGS = [t for t, _ in DST_TAGS]
TAG_SHAPES = _shape_cases(ALL_TAGS)


def test_table_sizes():
    assert len(set(dict(DST_TAGS).values())) >= 40
    for t, a in DST_TAGS:
        blocking((1,) * _ndims(a), a)          # every abstract tag parses in the reference


# -------------------------------------------------------------- plain -> any tag, every shape

@pytest.mark.parametrize("dtag,dims", TAG_SHAPES, ids=[f"{t}-{tid(s)}" for t, s in TAG_SHAPES])
def test_plain_to_tag(dtag, dims):
    x = plain_source(dims, np.float32, seed=len(dims))
    run_and_check(x, plain_tag(len(dims)), dtag, dims, pass_dims=False)


@pytest.mark.parametrize("stag,dims", TAG_SHAPES, ids=[f"{t}-{tid(s)}" for t, s in TAG_SHAPES])
def test_tag_to_plain(stag, dims):
    x = blocked_source(dims, stag, np.float32, seed=len(dims) + 1)
    abs_ = ABSTRACT.get(stag, stag)
    is_plain = not blocking(dims, abs_)["inner_blks"]
    run_and_check(x, stag, plain_tag(len(dims)), dims, pass_dims=not is_plain)


# --------------------------------------------------------------- every tag x every dtype

TAG_DTYPES = [(t, d) for t in ALL_TAGS for d in DTYPES]


@pytest.mark.parametrize("dtag,dtype", TAG_DTYPES, ids=[f"{t}-{tid(d)}" for t, d in TAG_DTYPES])
def test_dtype_plain_to_tag(dtag, dtype):
    dims = ONE_SHAPE[_ndims(ABSTRACT[dtag])]
    x = plain_source(dims, dtype, seed=3)
    run_and_check(x, plain_tag(len(dims)), dtag, dims, pass_dims=False)


@pytest.mark.parametrize("stag,dtype", TAG_DTYPES, ids=[f"{t}-{tid(d)}" for t, d in TAG_DTYPES])
def test_dtype_tag_to_plain(stag, dtype):
    dims = ONE_SHAPE[_ndims(ABSTRACT[stag])]
    x = blocked_source(dims, stag, dtype, seed=4)
    run_and_check(x, stag, plain_tag(len(dims)), dims)


# ---------------------------------------------------------------------- threads {1, 2}

THREAD_CASES = [(t, s, n) for t in THREAD_TAGS
                for s in (ONE_SHAPE[_ndims(ABSTRACT[t])], SHAPES[_ndims(ABSTRACT[t])][-1])
                for n in (1, 2)]


@pytest.mark.parametrize("tag,dims,threads", THREAD_CASES,
                         ids=[f"{t}-{tid(s)}-t{n}" for t, s, n in THREAD_CASES])
def test_threads_both_directions(tag, dims, threads):
    x = plain_source(dims, np.float32, seed=5)
    y = run_and_check(x, plain_tag(len(dims)), tag, dims, threads=threads, pass_dims=False)
    run_and_check(y, tag, plain_tag(len(dims)), dims, threads=threads)


@pytest.mark.parametrize("tag,dtype,threads", [(t, d, n) for t in ("nChw16c", "OIhw4i16o4i", "nhwc")
                                               for d in ONE_PER_SIZE for n in (1, 2)],
                         ids=lambda v: tid(v) if not isinstance(v, int) else f"t{v}")
def test_threads_dtypes(tag, dtype, threads):
    dims = (5, 19, 7, 9)
    x = plain_source(dims, dtype, seed=6)
    run_and_check(x, "nchw", tag, dims, threads=threads, pass_dims=False)


# Medium tensors (a few hundred KB moved), large enough for a multi-threaded run, with dims that
# no block divides.  Every tag, both directions, threads 2 and 1 each against the reference.
MEDIUM_SHAPE = {1: (100003,), 2: (333, 301), 3: (7, 131, 111), 4: (3, 35, 29, 33),
                5: (3, 35, 17, 9, 7), 6: (2, 3, 35, 9, 7, 11)}


@pytest.mark.parametrize("tag", ALL_TAGS)
def test_medium_tensor_two_threads(tag):
    dims = MEDIUM_SHAPE[_ndims(ABSTRACT[tag])]
    p = plain_tag(len(dims))
    x = plain_source(dims, np.float32, seed=34)
    y = run_and_check(x, p, tag, dims, threads=2, pass_dims=False)
    run_and_check(x, p, tag, dims, threads=1, pass_dims=False)
    run_and_check(y, tag, p, dims, threads=2, pass_dims=bool(blocking(dims, ABSTRACT[tag])["inner_blks"]))


@pytest.mark.parametrize("stag,dtag", [("nchw", "nChw16c"), ("nChw16c", "nchw"), ("nchw", "nhwc"),
                                       ("nhwc", "nchw"), ("oihw", "OIhw4i16o4i"), ("nChw8c", "nChw16c"),
                                       ("goihw", "Goihw16g"), ("ab", "BA16a64b4a")])
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float64], ids=tid)
def test_medium_tensor_two_threads_dtypes(stag, dtag, dtype):
    sabs = ABSTRACT[stag]
    dims = {2: (613, 517), 4: (3, 35, 61, 53), 5: (33, 9, 17, 11, 7)}[_ndims(sabs)]
    if blocking(dims, sabs)["inner_blks"]:
        x = blocked_source(dims, stag, dtype, seed=35)
    else:
        order = blocking(dims, sabs)["order"]
        x = make_values(tuple(dims[d] for d in order), dtype, 35)
    run_and_check(x, stag, dtag, dims, threads=2, pass_dims=bool(blocking(dims, sabs)["inner_blks"]))
    run_and_check(x, stag, dtag, dims, threads=1, pass_dims=bool(blocking(dims, sabs)["inner_blks"]))


# ------------------------------------------------------------------------------ no out=

NO_OUT = [("nChw16c", (2, 17, 3, 5)), ("nhwc", (2, 17, 3, 5)), ("OIhw4i16o4i", (17, 3, 3, 3)),
          ("nchw", (2, 3, 4, 5)), ("x", (7,)), ("AB32a32b8a4b", (3, 17)), ("nChw16c", (2, 0, 3, 3)),
          ("gOIhw4i16o4i", (2, 17, 3, 2, 3))]


@pytest.mark.parametrize("tag,dims", NO_OUT, ids=[f"{t}-{tid(s)}" for t, s in NO_OUT])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_without_out_returns_new_array(tag, dims, dtype):
    x = plain_source(dims, dtype, seed=7)
    y = run_and_check(x, plain_tag(len(dims)), tag, dims, use_out=False, pass_dims=False)
    run_and_check(y, tag, plain_tag(len(dims)), dims, use_out=False)


def test_identity_plain_reorder_is_a_copy():
    x = plain_source((2, 3, 4, 5), np.float32)
    y = reorder.reorder(x, "nchw", "nchw")
    assert not np.shares_memory(x, y)
    assert_bits_equal(y, x)


# ----------------------------------------------------- blocked sources: flat, inferred dims

FLAT = [("nChw16c", (2, 17, 3, 5)), ("OIhw4i16o4i", (17, 3, 3, 3)), ("AB32a32b8a4b", (100, 70)),
        ("Goihw16g", (3, 3, 17, 1, 2)), ("A16a", (17,)), ("aBcdef16b", (2, 17, 3, 1, 1, 2))]


@pytest.mark.parametrize("tag,dims", FLAT, ids=[f"{t}-{tid(s)}" for t, s in FLAT])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_flat_blocked_source(tag, dims, dtype):
    x = blocked_source(dims, tag, dtype, seed=8).reshape(-1)
    run_and_check(x, tag, plain_tag(len(dims)), dims)
    run_and_check(x, tag, "nhwc" if len(dims) == 4 else plain_tag(len(dims))[::-1], dims)


UNPADDED = [("nChw16c", (2, 32, 3, 5)), ("OIhw4i16o4i", (32, 16, 3, 3)), ("AB16b16a2b", (16, 64)),
            ("Goihw8g", (8, 1, 1, 3, 3))]


@pytest.mark.parametrize("tag,dims", UNPADDED, ids=[t for t, _ in UNPADDED])
def test_blocked_source_dims_inferred_from_physical_shape(tag, dims):
    x = blocked_source(dims, tag, np.float32, seed=9)
    run_and_check(x, tag, plain_tag(len(dims)), dims, pass_dims=False)


# ---------------------------------------------------------------- non-contiguous plain sources

def _views():
    """(name, make(dtype) -> (x, stag)) where x's axes are stag's physical axes."""
    def transposed(dt):          # an nchw buffer seen as (n, h, w, c)
        b = make_values((2, 17, 3, 5), dt, 10)
        return b.transpose(0, 2, 3, 1), "nhwc"

    def transposed2(dt):         # an nhwc buffer seen as (n, c, h, w)
        b = make_values((2, 3, 5, 17), dt, 11)
        return b.transpose(0, 3, 1, 2), "nchw"

    def stepped(dt):
        b = make_values((2, 34, 3, 5), dt, 12)
        return b[:, ::2], "nchw"

    def negative(dt):
        b = make_values((2, 17, 3, 5), dt, 13)
        return b[:, ::-1], "nchw"

    def negative_all(dt):
        b = make_values((2, 17, 3, 5), dt, 14)
        return b[::-1, ::-1, ::-1, ::-1], "nchw"

    def offset(dt):
        b = make_values((3, 19, 4, 6), dt, 15)
        return b[1:, 2:], "nchw"

    def offset_inner(dt):
        b = make_values((3, 19, 4, 6), dt, 16)
        return b[1:, 2:, 1:, 1:], "nchw"

    def mixed(dt):
        b = make_values((4, 40, 5, 7), dt, 17)
        return b[::-2, 1:35:2, ::-1, 1::3].transpose(0, 2, 3, 1), "nhwc"

    def fortran(dt):
        return np.asfortranarray(make_values((2, 17, 3, 5), dt, 18)), "nchw"

    def weights_hwio(dt):        # an oihw buffer seen as (h, w, i, o)
        b = make_values((17, 3, 3, 2), dt, 19)
        return b.transpose(2, 3, 1, 0), "hwio"

    return [("transposed", transposed), ("transposed2", transposed2), ("stepped", stepped),
            ("negative", negative), ("negative_all", negative_all), ("offset", offset),
            ("offset_inner", offset_inner), ("mixed", mixed), ("fortran", fortran),
            ("weights_hwio", weights_hwio)]


VIEWS = _views()
VIEW_DSTS = ["nChw16c", "nChw8c", "nhwc", "nchw", "OIhw4i16o4i", "OIhw16i16o", "NChw16n16c"]


@pytest.mark.parametrize("dtag", VIEW_DSTS)
@pytest.mark.parametrize("name,make", VIEWS, ids=[n for n, _ in VIEWS])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_non_contiguous_source(name, make, dtag, dtype):
    x, stag = make(dtype)
    dims = logical_dims(x.shape, ABSTRACT[stag])
    run_and_check(x, stag, dtag, dims, pass_dims=False, what=f"{name} {stag}->{dtag}")


@pytest.mark.parametrize("name,make", VIEWS, ids=[n for n, _ in VIEWS])
@pytest.mark.parametrize("threads", [1, 2])
def test_non_contiguous_source_threads(name, make, threads):
    x, stag = make(np.float32)
    dims = logical_dims(x.shape, ABSTRACT[stag])
    run_and_check(x, stag, "nChw16c", dims, threads=threads, pass_dims=False)


@pytest.mark.parametrize("dtag", ["nChw16c", "nhwc", "OIhw4i16o4i", "nchw"])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_read_only_source(dtag, dtype):
    x = make_values((2, 17, 3, 5), dtype, 20)
    x.flags.writeable = False
    run_and_check(x, "nchw", dtag, x.shape, pass_dims=False)
    y = blocked_source((2, 17, 3, 5), "nChw16c", dtype, 21)
    y.flags.writeable = False
    run_and_check(y, "nChw16c", dtag, (2, 17, 3, 5))


def test_read_only_view_source():
    b = make_values((3, 19, 4, 6), np.float32, 22)
    b.flags.writeable = False
    x = b[1:, ::-2]
    run_and_check(x, "nchw", "nChw16c", x.shape, pass_dims=False)


def test_broadcast_source_is_rejected_or_exact():
    """A zero-stride source must be rejected with a clear error or handled exactly."""
    row = make_values((1, 17, 1, 1), np.float32, 23)
    x = np.broadcast_to(row, (2, 17, 3, 5))
    try:
        y = reorder.reorder(x, "nchw", "nChw16c")
    except ValueError:
        return
    expected = ref_from_plain(np.ascontiguousarray(x), "abcd", "aBcd16b")
    assert_bits_equal(y, expected)


# ---------------------------------------------------------------- plain sources in other orders

PLAIN_SRC = [("nhwc", "nChw16c"), ("nhwc", "nchw"), ("chwn", "nChw8c"), ("hwio", "OIhw16i16o"),
             ("hwio", "OIhw4i16o4i"), ("iohw", "OIhw8i16o2i"), ("ihwo", "Ohwi16o"),
             ("hwigo", "gOIhw4i16o4i"), ("hwigo", "Goihw16g"), ("gohwi", "gOIhw16i16o"),
             ("ba", "AB16b16a2b"), ("ba", "BA16a64b4a"), ("nwc", "nCw16c"), ("acb", "aCB16b64c4b"),
             ("ndhwc", "nCdhw16c"), ("dhwigo", "aBcdef16b"), ("dhwigo", "Goidhw16g"),
             ("cn", "nc"), ("nhwc", "hwio"), ("wigo", "Goiw16g")]
_PLAIN_ABS = {"ihwo": "bcda", "gohwi": "abdec", "ba": "ba", "acb": "acb", "cn": "ba", "wigo": "dcab"}
ABSTRACT.update({k: v for k, v in _PLAIN_ABS.items() if k not in ABSTRACT})


@pytest.mark.parametrize("stag,dtag", PLAIN_SRC, ids=[f"{s}-{d}" for s, d in PLAIN_SRC])
@pytest.mark.parametrize("dtype", [np.float32, np.int8], ids=tid)
def test_plain_source_orders(stag, dtag, dtype):
    sabs = ABSTRACT[stag]
    dims = ONE_SHAPE[len(sabs)]
    order = blocking(dims, sabs)["order"]
    x = make_values(tuple(dims[d] for d in order), dtype, 24)
    run_and_check(x, stag, dtag, dims, pass_dims=False)


# ------------------------------------------------------------------ round trips and equivalence

@pytest.mark.parametrize("tag", ALL_TAGS)
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_round_trip_identity(tag, dtype):
    dims = ONE_SHAPE[_ndims(ABSTRACT[tag])]
    x = plain_source(dims, dtype, seed=25)
    p = plain_tag(len(dims))
    y = reorder.reorder(x, p, tag)
    back = _rr(y, tag, p, dims)
    assert_bits_equal(back, x, f"{p}->{tag}->{p}")


# (src, dst, shapes): blocked -> blocked with other blocks, and blocked -> plain permutations
BLOCKED_PAIRS = [
    ("nChw8c", "nChw16c", [(2, 17, 3, 5), (1, 3, 1, 1), (2, 40, 2, 2)]),
    ("nChw16c", "nChw8c", [(2, 17, 3, 5), (2, 40, 2, 2)]),
    ("nChw4c", "nChw32c", [(2, 33, 3, 2)]),
    ("nChw16c", "nhwc", [(2, 17, 3, 5), (1, 1, 1, 1)]),
    ("nChw16c", "NChw16n16c", [(17, 19, 2, 2), (2, 0, 3, 3)]),
    ("NChw16n16c", "nChw16c", [(17, 19, 2, 2)]),
    ("OIhw16i16o", "OIhw4i16o4i", [(17, 33, 2, 3), (3, 3, 1, 1)]),
    ("OIhw4i16o4i", "OIhw16i16o", [(17, 33, 2, 3)]),
    ("OIhw8i16o2i", "OIhw4i16o4i", [(20, 10, 3, 3)]),
    ("OIhw8i16o2i", "OIhw8o16i2o", [(20, 10, 3, 3)]),
    ("OIhw4i16o4i", "hwio", [(20, 10, 3, 3)]),
    ("IOhw16o16i", "OIhw16i16o", [(17, 33, 1, 2)]),
    ("OhwI16o4i", "Ohwi16o", [(17, 33, 1, 2)]),
    ("gOIhw16i16o", "gOIhw4i16o4i", [(2, 17, 3, 2, 3)]),
    ("gOIhw4o4i", "gOIhw2i8o4i", [(3, 5, 7, 1, 2)]),
    ("Goihw16g", "Goihw8g", [(17, 1, 1, 3, 3), (3, 2, 2, 1, 1)]),
    ("Goihw8g", "gOIhw4i16o4i", [(9, 3, 17, 1, 1)]),
    ("AB16b16a2b", "BA16a64b4a", [(16, 63), (3, 5)]),
    ("AB32a32b8a4b", "AB16b16a2b", [(100, 70)]),
    ("BA16a32b2a", "AB32a32b8a4b", [(33, 17)]),
    ("aCB16b64c4b", "aCB16b32c2b", [(2, 17, 65)]),
    ("A16a", "A4a", [(17,), (0,)]),
    ("aBcdef16b", "Abcdef16a", [(2, 17, 3, 1, 1, 2)]),
    ("gOIdhw4i16o4i", "goidhw", [(2, 17, 3, 1, 1, 2)]),
    ("ABcd4a8b8a4b", "ABcd8b16a2b", [(29, 27, 2, 2)]),
]
PAIR_CASES = [(s, d, dims) for s, d, shapes in BLOCKED_PAIRS for dims in shapes]
ABSTRACT.setdefault("A4a", "A4a")


@pytest.mark.parametrize("stag,dtag,dims", PAIR_CASES,
                         ids=[f"{s}-{d}-{tid(x)}" for s, d, x in PAIR_CASES])
@pytest.mark.parametrize("dtype", ONE_PER_SIZE, ids=tid)
def test_blocked_to_blocked(stag, dtag, dims, dtype):
    x = blocked_source(dims, stag, dtype, seed=26)
    run_and_check(x, stag, dtag, dims)


@pytest.mark.parametrize("stag,dtag,dims", PAIR_CASES,
                         ids=[f"{s}-{d}-{tid(x)}" for s, d, x in PAIR_CASES])
def test_garbage_in_source_padding_never_reaches_dst(stag, dtag, dims):
    """Reorders read only the logical region of src; dst padding is always exactly 0."""
    sabs = ABSTRACT[stag]
    x = blocked_source(dims, stag, np.float32, seed=27)
    # mark every src padding position with a non-zero value
    pos, grid = _all_padded_offsets(dims, sabs)
    flat = x.reshape(-1)
    padding = np.ones(flat.size, bool)
    padding[pos] = False
    flat[padding] = 7.25
    run_and_check(x, stag, dtag, dims)


def _all_padded_offsets(dims, abstract):
    from reorder.testing.reference import offsets_of_all
    return offsets_of_all(dims, abstract)


@pytest.mark.parametrize("tag", ["nChw16c", "OIhw4i16o4i", "AB32a32b8a4b", "Goihw16g", "A16a"])
def test_same_tag_blocked_copy(tag):
    dims = ONE_SHAPE[_ndims(ABSTRACT[tag])]
    x = blocked_source(dims, tag, np.float32, seed=28)
    y = run_and_check(x, tag, tag, dims)
    assert not np.shares_memory(x, y)


def test_plain_source_with_explicit_logical_dims():
    x = make_values((2, 3, 5, 17), np.float32, 33)           # nhwc array: (N, H, W, C)
    run_and_check(x, "nhwc", "nChw16c", (2, 17, 3, 5), pass_dims=True)


# A -> B and A -> C -> B must both equal the reference's A -> B
PATHS = [
    ("nchw", "nhwc", "nChw16c", (2, 17, 3, 5)),
    ("nchw", "nChw8c", "nChw16c", (2, 17, 3, 5)),
    ("nchw", "NChw16n16c", "nChw16c", (17, 19, 2, 2)),
    ("oihw", "OIhw16i16o", "OIhw4i16o4i", (17, 33, 2, 3)),
    ("hwio", "oihw", "OIhw8i16o2i", (17, 33, 2, 3)),
    ("goihw", "Goihw8g", "Goihw16g", (17, 1, 1, 3, 3)),
    ("ab", "AB16b16a2b", "BA16a64b4a", (33, 70)),
    ("nChw16c", "nchw", "nhwc", (2, 17, 3, 5)),
]
ABSTRACT.update({"oihw": "abcd", "goihw": "abcde", "ab": "ab"})


@pytest.mark.parametrize("a,c,b,dims", PATHS, ids=[f"{a}-{c}-{b}" for a, c, b, _ in PATHS])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8], ids=tid)
def test_path_equivalence(a, c, b, dims, dtype):
    if blocking(dims, ABSTRACT[a])["inner_blks"]:
        x = blocked_source(dims, a, dtype, seed=29)
    else:
        order = blocking(dims, ABSTRACT[a])["order"]
        x = make_values(tuple(dims[d] for d in order), dtype, 29)
    expected = ref_reorder(np.ascontiguousarray(x).reshape(-1), dims, ABSTRACT[a], ABSTRACT[b]) \
        .reshape(ref_physical_shape(dims, ABSTRACT[b]))
    direct = _rr(x, a, b, dims)
    assert_bits_equal(direct, expected, f"{a}->{b} vs the reference")
    via = _rr(_rr(x, a, c, dims), c, b, dims)
    assert_bits_equal(via, expected, f"{a}->{c}->{b} vs the reference")


# ----------------------------------------------------- thread-count invariance on ~2 MB tensors

BIG = [
    ("nchw", "nChw16c", (4, 33, 60, 64), np.float32),
    ("nChw16c", "nchw", (4, 33, 60, 64), np.float32),
    ("nchw", "nhwc", (4, 33, 60, 64), np.float32),
    ("oihw", "OIhw4i16o4i", (200, 300, 3, 3), np.float32),
    ("nchw", "nChw16c", (4, 35, 120, 128), np.int8),
    ("nhwc", "nchw", (2, 60, 70, 67), np.float64),
]


@pytest.mark.parametrize("stag,dtag,dims,dtype", BIG, ids=[f"{s}-{d}-{tid(np.dtype(t))}" for s, d, _, t in BIG])
def test_threads_identical_on_large_tensor(stag, dtag, dims, dtype):
    if blocking(dims, ABSTRACT[stag])["inner_blks"]:
        x = blocked_source(dims, stag, dtype, seed=30)
    else:
        order = blocking(dims, ABSTRACT[stag])["order"]
        x = make_values(tuple(dims[d] for d in order), dtype, 30)
    assert x.nbytes >= 1_000_000
    for threads in (1, 2):
        run_and_check(x, stag, dtag, dims, threads=threads)


# ------------------------------------------------------------------------------- bf16 moves

def test_bfloat16_move():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes provides numpy bfloat16 arrays")
    x = make_values((2, 17, 3, 5), np.float32, 31).astype(ml_dtypes.bfloat16)
    run_and_check(x, "nchw", "nChw16c", x.shape, pass_dims=False)
    run_and_check(x, "nchw", "nhwc", x.shape, pass_dims=False)


# --------------------------------------------------------------- oneDNN case list (same-type moves)

_CASES_FILE = pathlib.Path(__file__).resolve().parent / "data" / "onednn_reorder_cases.json"
_DT = {"f32": np.float32, "s32": np.int32, "s8": np.int8, "u8": np.uint8, "f16": np.float16,
       "bf16": np.uint16, "f64": np.float64}


def _load_cases():
    out = []
    for c in json.loads(_CASES_FILE.read_text()):
        if c["sdt"] != c["ddt"] or c["sdt"] not in _DT:
            continue
        if c.get("scales") or c.get("zero_points") or c.get("oflag") or c.get("sum_beta") is not None:
            continue
        out.append(c)
    return out


ONEDNN_CASES = _load_cases()


def test_onednn_case_selection_is_not_empty():
    assert len(ONEDNN_CASES) >= 20


@pytest.mark.parametrize("case", ONEDNN_CASES,
                         ids=[f"{c['stag_abc']}-{c['dtag_abc']}-{tid(tuple(c['dims']))}-{c['sdt']}"
                              for c in ONEDNN_CASES])
def test_onednn_case(case):
    dims = tuple(case["dims"])
    stag, dtag = case["stag_abc"], case["dtag_abc"]
    dtype = _DT[case["sdt"]]
    if blocking(dims, stag)["inner_blks"]:
        x = ref_from_plain(plain_source(dims, dtype, 32), plain_tag(len(dims)), stag)
        run_and_check(x, stag, dtag, dims)
    else:
        order = blocking(dims, stag)["order"]
        x = make_values(tuple(dims[d] for d in order), dtype, 32)
        run_and_check(x, stag, dtag, dims, pass_dims=False)
