"""Desc.permute_axes, Desc.reshape and Desc.submemory against a real oneDNN: the descriptor
reorder builds and the one libdnnl builds (dnnl_memory_desc_permute_axes / _reshape /
_create_submemory) give the same physical offset for every logical index, on blocked and
plain layouts, sizes not divisible by the block, size-1 and size-0 dims, 1-D to 5-D. Where
oneDNN refuses, reorder refuses too and names the dim, except for the two documented
differences. Reading a view through reorder() is checked against numpy on the logical tensor."""
import pickle
import re

import numpy as np
import pytest

import reorder
from reorder import Desc, ReorderError
from reorder.models import onednn_runtime as R

from onednn_descs import INVALID_ARGUMENTS, TAG_VALUES, UNIMPLEMENTED, Onednn, Refused

LIB = R.library()
needs_lib = pytest.mark.skipif(LIB is None, reason="oneDNN not installed (pip install "
                                                   "onednn-cpu-gomp, the test extra)")
ABC = "abcdefghijkl"


@pytest.fixture(scope="module")
def dnnl():
    o = Onednn(LIB)
    yield o
    o.close()


def desc_offsets(d):
    """Desc.offset of every logical index, as an array of shape d.dims."""
    return np.array([d.offset(i) for i in np.ndindex(*d.dims)], np.int64).reshape(d.dims)


def make(dnnl, dims, layout):
    """The same layout in both libraries: an abstract tag, or a tuple of plain strides."""
    if isinstance(layout, tuple):
        return Desc(dims, "f32", strides=layout), dnnl.with_strides(dims, layout)
    return Desc(dims, "f32", layout), dnnl.with_tag(dims, layout)


def logical(dims, seed=0):
    """Distinct values, so a wrong element shows."""
    return np.random.default_rng(seed).permutation(max(int(np.prod(dims)), 1))[
        :int(np.prod(dims))].astype(np.float32).reshape(dims) + 1


def parent_buffer(dnnl, md, x):
    """A flat buffer holding logical tensor x in oneDNN's layout `md`, written from oneDNN's
    offsets (not reorder's); every other element NaN."""
    off = dnnl.offsets(md)
    size = max(dnnl.read(md)["size"] // 4, int(off.max()) + 1 if off.size else 1)
    buf = np.full(size, np.nan, np.float32)          # the whole padded buffer
    buf[off] = x
    return buf


# --------------------------------------------------------------------------- permute_axes

PERMUTE = [
    ("abcd", (2, 3, 4, 5), (1, 0, 2, 3)),
    ("acdb", (2, 20, 5, 7), (0, 3, 1, 2)),              # nhwc
    ("aBcd16b", (2, 20, 5, 7), (3, 2, 1, 0)),           # nChw16c, C not divisible
    ("aBcd8b", (1, 9, 1, 3), (0, 2, 1, 3)),             # nChw8c, size-1 dims
    ("ABcd16b16a", (20, 18, 3, 3), (1, 0, 2, 3)),       # OIhw16i16o -> IOhw16o16i
    ("ABcd4b16a4b", (20, 10, 3, 3), (1, 0, 3, 2)),      # OIhw4i16o4i
    ("aBCde16c16b", (2, 20, 18, 3, 3), (0, 2, 1, 3, 4)),  # gOIhw16i16o -> gIOhw16o16i
    ("Abcde16a", (20, 1, 1, 3, 3), (4, 1, 2, 3, 0)),    # Goihw16g
    ("aBc16b", (2, 20, 9), (2, 0, 1)),                  # 3-D nCw16c
    ("a", (7,), (0,)),                                  # 1-D
    ("abc", (3, 0, 5), (2, 1, 0)),                      # a size-0 dim
    ((40, 10, 1), (3, 4, 5), (1, 2, 0)),                # plain, gapped strides
]


@needs_lib
@pytest.mark.parametrize("layout,dims,perm", PERMUTE, ids=[f"{c[0]}-{c[2]}" for c in PERMUTE])
def test_permute_axes_matches_onednn(dnnl, layout, dims, perm):
    d, md = make(dnnl, dims, layout)
    p = d.permute_axes(perm)
    pmd = dnnl.permute_axes(md, perm)
    info = dnnl.read(pmd)
    assert list(p.dims) == info["dims"] and list(p.padded_dims) == info["padded_dims"]
    assert np.array_equal(desc_offsets(p), dnnl.offsets(pmd))
    # the definition, from the source's own offsets: logical dim i becomes dim perm[i]
    assert np.array_equal(desc_offsets(p), dnnl.offsets(md).transpose(np.argsort(perm)))
    assert p.nbytes == d.nbytes and p.physical_shape == d.physical_shape


def test_permute_oi_is_the_deconvolution_tag():
    w = Desc((64, 32, 3, 3), "f32", "OIhw16i16o")
    io = w.permute_axes((1, 0, 2, 3))
    assert io == Desc((32, 64, 3, 3), "f32", "IOhw16o16i")
    assert "IOhw16o16i" in repr(io)
    assert io.permute_axes((1, 0, 2, 3)) == w


# --------------------------------------------------------------------------------- reshape

# (layout, dims, new dims, expect): "same" = both accept; "refused" = both refuse, reorder's
# message matches the pattern; "beyond" = reorder accepts what oneDNN 3.2 refuses
RESHAPE = [
    ("abcd", (2, 3, 4, 5), (6, 20), "same"),
    ("abcd", (2, 3, 4, 5), (120,), "same"),
    ("abcd", (2, 3, 4, 5), (2, 3, 2, 2, 5), "same"),
    ("abcd", (2, 3, 4, 5), (1, 2, 3, 4, 5, 1), "same"),
    ("abcd", (1, 3, 1, 5), (3, 5), "same"),
    ("acdb", (2, 3, 4, 5), (2, 3, 20), "same"),                 # nhwc: h, w dense
    ("aBcd16b", (2, 20, 5, 7), (2, 20, 35), "same"),
    ("aBcd16b", (2, 20, 5, 7), (1, 2, 20, 5, 7), "same"),
    ("aBcd16b", (2, 20, 5, 7), (2, 20, 5, 7, 1), "same"),
    ("aBcd16b", (2, 1, 5, 7), (2, 1, 35), "same"),              # size-1 dim padded to 16
    ("aBcd8b", (2, 16, 4, 4), (2, 16, 16), "same"),
    ("ABcd16b16a", (64, 32, 3, 3), (64, 32, 9), "same"),
    ("aBcde16b", (2, 17, 2, 3, 4), (2, 17, 24), "same"),        # 5-D
    ("aBc16b", (3, 20, 6), (3, 20, 2, 3), "same"),              # 3-D
    ("a", (12,), (3, 4), "same"),
    ("abc", (2, 0, 3), (2, 0, 3), "same"),
    ((40, 10, 1), (3, 4, 5), (12, 5), "same"),
    ("ABcd16b16a", (64, 32, 3, 3), (2, 32, 32, 3, 3), "beyond"),   # -> gOIhw16i16o
    ("aBCde16c16b", (2, 32, 32, 3, 3), (64, 32, 3, 3), "beyond"),  # and back
    ("aBcd16b", (2, 32, 5, 7), (2, 2, 16, 5, 7), "beyond"),
    ("aBcd8b", (2, 16, 5, 7), (32, 5, 7), "beyond"),            # n merged into whole blocks
    ("ABcd4b16a4b", (64, 32, 3, 3), (4, 16, 32, 3, 3), "beyond"),
    ("aBcd16b", (2, 32, 5, 7), (2, 4, 8, 5, 7), r"dim 1 .*cuts its blocks"),
    ("aBcd16b", (2, 32, 5, 7), (2, 160, 7), r"dim 1 .*blocked by 16 and is not the innermost"),
    ("aBcd16b", (2, 20, 5, 7), (40, 5, 7), r"dim 1 \(size 20\) is padded to 32"),
    ("aBcd16b", (2, 20, 5, 7), (2, 4, 5, 5, 7), r"dim 1 \(size 20\) is padded to 32"),
    ("aBcd16b", (2, 1, 5, 7), (2, 5, 7), r"dim 1 has size 1 but is padded to 16"),
    ("acdb", (2, 3, 4, 5), (6, 4, 5), r"dims 0\.\.1 are not dense"),
    ((40, 10, 1), (3, 4, 5), (3, 20), r"dims 1\.\.2 are not dense"),
    ("abcd", (2, 3, 4, 5), (2, 3, 4, 6), r"120 elements cannot become 144"),
    ("abc", (0, 3, 4), (3, 0, 4), r"size-0 dim"),
]


@needs_lib
@pytest.mark.parametrize("layout,dims,new,expect", RESHAPE,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[2]))}" for c in RESHAPE])
def test_reshape_against_onednn(dnnl, layout, dims, new, expect):
    d, md = make(dnnl, dims, layout)
    if expect not in ("same", "beyond"):
        with pytest.raises(ReorderError, match=expect):
            d.reshape(new)
        with pytest.raises(Refused) as e:
            dnnl.reshape(md, new)
        assert e.value.status in (INVALID_ARGUMENTS, UNIMPLEMENTED)
        return
    r = d.reshape(new)
    assert r.dims == tuple(new) and r.nbytes == d.nbytes and r.offset0 == d.offset0
    # a reshape reads the same logical elements in row-major order
    assert np.array_equal(desc_offsets(r), dnnl.offsets(md).reshape(new))
    if expect == "same":
        rmd = dnnl.reshape(md, new)
        info = dnnl.read(rmd)
        assert list(r.padded_dims) == info["padded_dims"]
        assert np.array_equal(desc_offsets(r), dnnl.offsets(rmd))
    else:
        with pytest.raises(Refused) as e:
            dnnl.reshape(md, new)
        assert e.value.status == INVALID_ARGUMENTS


@needs_lib
def test_reshape_o_into_groups_is_goihw16i16o(dnnl):
    """The stated difference: oneDNN 3.2 refuses this reshape; reorder's result is exactly
    the descriptor of the grouped tag, which oneDNN itself builds with the same offsets."""
    w = Desc((64, 32, 3, 3), "f32", "OIhw16i16o")
    g = w.reshape((2, 32, 32, 3, 3))
    assert g == Desc((2, 32, 32, 3, 3), "f32", "gOIhw16i16o")
    assert "gOIhw16i16o" in repr(g)
    assert np.array_equal(desc_offsets(g),
                          dnnl.offsets(dnnl.with_tag((2, 32, 32, 3, 3), "aBCde16c16b")))
    with pytest.raises(Refused) as e:
        dnnl.reshape(dnnl.with_tag((64, 32, 3, 3), "ABcd16b16a"), (2, 32, 32, 3, 3))
    assert e.value.status == INVALID_ARGUMENTS
    assert g.reshape((64, 32, 3, 3)) == w


def test_reshape_keeps_tag_equality():
    d = Desc((1, 3, 4, 5), "f32", "nchw")
    assert d.reshape((1, 3, 4, 5)) == d
    assert Desc((2, 20, 5, 7), "f32", "nChw16c").reshape((2, 20, 5, 7, 1)) == \
        Desc((2, 20, 5, 7, 1), "f32", "aBcde16b")


# ------------------------------------------------------------------------------ submemory

# (parent layout, parent dims, sub dims, offsets)
SUBMEMORY = [
    ("abcd", (4, 5, 6, 7), (2, 3, 4, 5), (1, 2, 1, 2)),
    ("acdb", (2, 20, 5, 7), (1, 7, 3, 4), (1, 5, 2, 3)),          # nhwc
    ("aBcd16b", (2, 32, 5, 7), (2, 16, 5, 7), (0, 16, 0, 0)),     # in-place concat half
    ("aBcd16b", (2, 32, 5, 7), (2, 16, 5, 7), (0, 0, 0, 0)),
    ("aBcd16b", (2, 20, 5, 7), (1, 4, 3, 7), (1, 16, 2, 0)),      # right border, padded
    ("aBcd16b", (3, 20, 5, 7), (1, 20, 1, 1), (2, 0, 4, 6)),      # size-1 region
    ("aBcd8b", (3, 20, 4, 4), (3, 12, 4, 4), (0, 8, 0, 0)),       # nChw8c, border
    ("ABcd16b16a", (48, 40, 3, 3), (16, 24, 3, 3), (32, 16, 0, 0)),
    ("ABcd4b16a4b", (20, 10, 3, 3), (4, 10, 2, 3), (16, 0, 1, 0)),
    ("Abcde16a", (20, 1, 1, 3, 3), (4, 1, 1, 3, 3), (16, 0, 0, 0, 0)),   # Goihw16g
    ("aBCde16c16b", (2, 32, 20, 3, 3), (1, 16, 4, 3, 3), (1, 16, 16, 0, 0)),
    ("aBcde16b", (2, 32, 3, 4, 5), (1, 16, 2, 2, 2), (1, 16, 1, 1, 1)),  # 5-D
    ("aBc16b", (2, 32, 9), (2, 16, 4), (0, 16, 3)),               # 3-D
    ("a", (10,), (4,), (3,)),                                     # 1-D
    ("aBcd16b", (2, 32, 5, 7), (2, 0, 5, 7), (0, 16, 0, 0)),      # size-0 region
    ((40, 10, 1), (3, 4, 5), (2, 2, 3), (1, 1, 2)),               # plain, gapped strides
]


@needs_lib
@pytest.mark.parametrize("layout,dims,sub,offsets", SUBMEMORY,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[2]))}" for c in SUBMEMORY])
def test_submemory_matches_onednn(dnnl, layout, dims, sub, offsets):
    d, md = make(dnnl, dims, layout)
    s = d.submemory(sub, offsets)
    smd = dnnl.submemory(md, sub, offsets)
    info = dnnl.read(smd)
    assert s.offset0 == info["offset0"] and list(s.padded_dims) == info["padded_dims"]
    assert list(s.strides) == info["strides"] and s.region == tuple(offsets)
    assert np.array_equal(desc_offsets(s), dnnl.offsets(smd))
    # the definition: the parent's offsets over the region
    region = tuple(slice(o, o + n) for o, n in zip(offsets, sub))
    assert np.array_equal(desc_offsets(s), dnnl.offsets(md)[region])


@needs_lib
def test_nested_submemory_permuted_and_reshaped(dnnl):
    d, md = make(dnnl, (2, 48, 5, 6), "aBcd16b")
    s = d.submemory((2, 32, 5, 6), (0, 16, 0, 0)).submemory((1, 16, 3, 6), (1, 16, 2, 0))
    smd = dnnl.submemory(dnnl.submemory(md, (2, 32, 5, 6), (0, 16, 0, 0)),
                         (1, 16, 3, 6), (1, 16, 2, 0))
    assert np.array_equal(desc_offsets(s), dnnl.offsets(smd))
    r, rmd = s.reshape((1, 16, 18)), dnnl.reshape(smd, (1, 16, 18))
    assert np.array_equal(desc_offsets(r), dnnl.offsets(rmd))
    p, pmd = s.permute_axes((0, 1, 3, 2)), dnnl.permute_axes(smd, (0, 1, 3, 2))
    assert np.array_equal(desc_offsets(p), dnnl.offsets(pmd)) and p.region == (1, 16, 0, 2)


# (layout, dims, sub, offsets, pattern, oneDNN status)
SUB_REFUSED = [
    ("aBcd16b", (2, 32, 5, 7), (2, 16, 5, 7), (0, 8, 0, 0),
     r"offset 8 of dim 1 is not a multiple of the dim's block of 16", UNIMPLEMENTED),
    ("ABcd4b16a4b", (32, 32, 3, 3), (16, 16, 3, 3), (0, 4, 0, 0),
     r"offset 4 of dim 1 .* block of 16", UNIMPLEMENTED),
    ("aBcd16b", (2, 48, 5, 7), (2, 20, 5, 7), (0, 0, 0, 0),
     r"dim 1 ends at 20, inside a block of 16", UNIMPLEMENTED),
    ("aBcd16b", (2, 32, 5, 7), (2, 16, 5, 7), (0, 32, 0, 0),
     r"dim 1: offset 32 \+ size 16 = 48 runs past the parent's size 32", INVALID_ARGUMENTS),
    ("abcd", (2, 3, 4, 5), (2, 3, 4, 5), (0, 0, 0, 1),
     r"dim 3: offset 1 \+ size 5 = 6 runs past", INVALID_ARGUMENTS),
    ("abcd", (2, 3, 4, 5), (2, 3, 4, 5), (0, -1, 0, 0),
     r"dim 1 has a negative offset -1", INVALID_ARGUMENTS),
    ("abcd", (2, 3, 4, 5), (2, 3, -4, 5), (0, 0, 0, 0),
     r"dim 2 has a negative size -4", INVALID_ARGUMENTS),
]


@needs_lib
@pytest.mark.parametrize("layout,dims,sub,offsets,pattern,status", SUB_REFUSED,
                         ids=[c[4][:30] for c in SUB_REFUSED])
def test_submemory_refusals_match_onednn(dnnl, layout, dims, sub, offsets, pattern, status):
    d, md = make(dnnl, dims, layout)
    with pytest.raises(ReorderError, match=pattern):
        d.submemory(sub, offsets)
    with pytest.raises(Refused) as e:
        dnnl.submemory(md, sub, offsets)
    assert e.value.status == status


@needs_lib
def test_submemory_stopping_inside_a_block_is_refused_unlike_onednn(dnnl):
    """The stated difference: channels 0..3 of a 32-channel nChw16c. oneDNN accepts it and
    gives it padded dims 4 (no padding); reorder's sub-memory pads a dim to its block, and
    that padding (channels 4..15) is the parent's data, which a write would zero."""
    d, md = make(dnnl, (2, 32, 5, 7), "aBcd16b")
    info = dnnl.read(dnnl.submemory(md, (2, 4, 5, 7), (0, 0, 0, 0)))
    assert info["padded_dims"] == [2, 4, 5, 7]
    with pytest.raises(ReorderError, match=r"dim 1 ends at 4, inside a block of 16.*parent's "
                                           r"data"):
        d.submemory((2, 4, 5, 7), (0, 0, 0, 0))
    # at the parent's end the same short region is fine: its padding is the parent's own
    d20, md20 = make(dnnl, (2, 20, 5, 7), "aBcd16b")
    s = d20.submemory((2, 4, 5, 7), (0, 16, 0, 0))
    assert np.array_equal(desc_offsets(s),
                          dnnl.offsets(dnnl.submemory(md20, (2, 4, 5, 7), (0, 16, 0, 0))))


def test_submemory_of_a_reversed_view():
    """A parent whose element 0 is not its buffer's start (negative strides)."""
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    d = Desc((4, 10), "f32", strides=(10, -1), offset0=9)       # base[:, ::-1] of the buffer
    s = d.submemory((2, 3), (1, 2))
    assert np.array_equal([[base.reshape(-1)[s.offset(i, j)] for j in range(3)]
                           for i in range(2)], base[:, ::-1][1:3, 2:5])
    at0 = Desc.of(base[:, ::-1])                  # element 0 at the array's data pointer
    with pytest.raises(ReorderError, match=r"starts 2 elements before the parent's element 0"):
        at0.submemory((2, 3), (0, 2))


# ------------------------------------------------------------------ reading through reorder

READ = [
    ("aBcd16b", (2, 32, 5, 7), "sub", ((2, 16, 5, 7), (0, 16, 0, 0))),
    ("aBcd16b", (2, 20, 5, 7), "sub", ((1, 4, 3, 7), (1, 16, 2, 0))),
    ("ABcd4b16a4b", (20, 10, 3, 3), "sub", ((4, 10, 2, 3), (16, 0, 1, 0))),
    ("acdb", (2, 20, 5, 7), "sub", ((1, 7, 3, 4), (1, 5, 2, 3))),
    ("aBcde16b", (2, 32, 3, 4, 5), "sub", ((1, 16, 2, 2, 2), (1, 16, 1, 1, 1))),
    ("ABcd16b16a", (20, 18, 3, 3), "perm", (1, 0, 2, 3)),
    ("aBcd8b", (2, 20, 5, 7), "perm", (3, 2, 1, 0)),
    ("ABcd16b16a", (64, 32, 3, 3), "reshape", (2, 32, 32, 3, 3)),
    ("aBcd16b", (2, 20, 5, 7), "reshape", (2, 20, 35)),
]


@needs_lib
@pytest.mark.parametrize("layout,dims,op,arg", READ,
                         ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in READ])
@pytest.mark.parametrize("threads", [1, 2])
def test_read_view_through_reorder(dnnl, layout, dims, op, arg, threads):
    """The parent's buffer is written from oneDNN's offsets; reorder() reads the view into a
    plain array, which must be the numpy slice / transpose / reshape of the logical tensor."""
    d, md = make(dnnl, dims, layout)
    x = logical(dims)
    buf = parent_buffer(dnnl, md, x)
    before = buf.copy()
    if op == "sub":
        v = d.submemory(*arg)
        want = x[tuple(slice(o, o + n) for o, n in zip(arg[1], arg[0]))]
    elif op == "perm":
        v = d.permute_axes(arg)
        want = x.transpose(np.argsort(arg))
    else:
        v = d.reshape(arg)
        want = x.reshape(arg)
    got = reorder.reorder(buf, v, ABC[:v.ndim], threads=threads)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(buf, before, equal_nan=True)          # input untouched


@needs_lib
def test_read_submemory_from_the_parents_own_array(dnnl):
    """The parent's array in its blocked physical shape serves as the buffer a sub-memory
    indexes, as out= takes it; a non-contiguous array is refused, naming the offset."""
    dims, layout = (2, 48, 5, 7), "aBcd16b"
    d, md = make(dnnl, dims, layout)
    x = logical(dims)
    parent = parent_buffer(dnnl, md, x).reshape(d.physical_shape)
    v = d.submemory((2, 16, 3, 7), (0, 32, 2, 0))
    got = reorder.reorder(parent, v, "abcd")
    assert np.array_equal(got, x[:, 32:48, 2:5])
    with pytest.raises(ReorderError, match=r"offset0=\d+ indexes a C-contiguous buffer"):
        reorder.reorder(parent[:, ::2], v, "abcd")
    with pytest.raises(ReorderError, match="cannot hold"):
        reorder.reorder(parent[:1], v, "abcd")


# -------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("perm,err,pattern", [
    ((0, 1, 2), ReorderError, r"perm \(0, 1, 2\) has 3 entries but the descriptor has 4"),
    ((0, 0, 2, 3), ReorderError, r"not a permutation: dim 0 appears twice"),
    ((0, 1, 2, 4), ReorderError, r"4 is not a dim of a 4-dim descriptor"),
    ((0, 1, 2, -1), ReorderError, r"-1 is not a dim"),
    ((0, 1, 2.0, 3), TypeError, r"perm must be a sequence of integers"),
    (None, TypeError, r"perm must be a sequence of integers"),
])
def test_permute_bad_input(perm, err, pattern):
    with pytest.raises(err, match=pattern):
        Desc((2, 3, 4, 5), "f32", "nChw16c").permute_axes(perm)


@pytest.mark.parametrize("dims,err,pattern", [
    ((2, -3, 4, 5), ReorderError, r"negative size in dim 1"),
    ((2, 3, 4.0, 5), TypeError, r"dims must be a sequence of integers"),
    ((), ReorderError, r"1\.\.12 are supported"),
    ((1,) * 13, ReorderError, r"1\.\.12 are supported"),
])
def test_reshape_bad_input(dims, err, pattern):
    with pytest.raises(err, match=pattern):
        Desc((2, 3, 4, 5), "f32", "nchw").reshape(dims)


@pytest.mark.parametrize("dims,offsets,err,pattern", [
    ((2, 3, 4), (0, 0, 0, 0), ReorderError, r"dims \(2, 3, 4\) has 3 entries but the parent "
                                            r"has 4"),
    ((2, 3, 4, 5), (0, 0), ReorderError, r"offsets \(0, 0\) has 2 entries"),
    ((2, 3, 4, 5), (0, 0, 0, 0.5), TypeError, r"offsets must be a sequence of integers"),
    ("abcd", (0, 0, 0, 0), TypeError, r"dims must be a sequence of integers"),
    ((2, 3, 4, 5), (0, 0, 10**9, 0), ReorderError, r"dim 2: offset 1000000000"),
])
def test_submemory_bad_input(dims, offsets, err, pattern):
    with pytest.raises(err, match=pattern):
        Desc((2, 3, 4, 5), "f32", "nchw").submemory(dims, offsets)


# ------------------------------------------------------------------- repr, explain, pickle

def test_views_say_what_they_are():
    parent = Desc((2, 32, 5, 7), "f32", "nChw16c")
    half = parent.submemory((2, 16, 5, 7), (0, 16, 0, 0))
    r = repr(half)
    assert "offset0=560" in r and "aBcd16b" in r and "2x16x5x7" in r
    text = half.explain()
    assert "sub-memory at offsets (0, 16, 0, 0)" in text and "element 560" in text
    rows = parent.submemory((1, 32, 2, 7), (1, 0, 3, 0))      # not contiguous: strided view
    assert "aBcd16b strides=(1120, 560, 112, 16)" in repr(rows)
    assert "offset0=1456" in repr(rows)
    again = pickle.loads(pickle.dumps(half))
    assert again == half and again.region == half.region and repr(again) == r
    assert half != Desc((2, 16, 5, 7), "f32", "nChw16c")      # offset0 is part of identity


# ---------------------------------------------------------------------- random sweeps

def _rank(tag):
    return len([ch for n, ch in re.findall(r"(\d*)([a-lA-L])", tag) if not n])


@needs_lib
def test_random_reshapes_agree_with_onednn(dnnl):
    """Random splits, merges and size-1 insertions of every tag the helper knows: where oneDNN
    accepts, reorder gives the same offsets and padded dims; reorder accepts more only for
    blocked layouts (whole-block splits and merges); every accepted view reads the logical
    elements in row-major order."""
    rng = np.random.default_rng(48)
    seen = {}
    for _ in range(400):
        tag = str(rng.choice(sorted(TAG_VALUES)))
        dims = [int(rng.choice([1, 1, 2, 3, 4, 8, 16, 20, 32])) for _ in range(_rank(tag))]
        if np.prod(dims) > 4000:
            continue
        parts = []
        for n in dims:
            if n > 1 and rng.random() < 0.3:
                f = int(rng.choice([k for k in range(1, n + 1) if n % k == 0]))
                parts += [f, n // f]
            else:
                parts.append(n)
        new, i = [], 0
        while i < len(parts):
            take = 2 if i + 1 < len(parts) and rng.random() < 0.3 else 1
            new.append(int(np.prod(parts[i:i + take])))
            i += take
        if rng.random() < 0.2:
            new.insert(int(rng.integers(len(new) + 1)), 1)
        d, md = make(dnnl, dims, tag)
        try:
            r = d.reshape(new)
        except ReorderError:
            r = None
        try:
            rmd = dnnl.reshape(md, new)
        except Refused:
            rmd = None
        seen[r is not None, rmd is not None] = seen.get((r is not None, rmd is not None), 0) + 1
        case = (tag, dims, new)
        assert not (rmd is not None and r is None), case
        if r is not None:
            assert np.array_equal(desc_offsets(r), dnnl.offsets(md).reshape(new)), case
        if rmd is not None:
            assert np.array_equal(desc_offsets(r), dnnl.offsets(rmd)), case
            assert list(r.padded_dims) == dnnl.read(rmd)["padded_dims"], case
        elif r is not None:
            assert d.is_blocked, case
        dnnl.close()
    assert seen.get((True, True), 0) > 100 and seen.get((False, False), 0) > 30


@needs_lib
def test_random_submemories_agree_with_onednn(dnnl):
    """Random regions (block-aligned or not, inside or past the parent): same offsets,
    offset0 and padded dims where both accept; reorder refuses only what oneDNN refuses, plus
    the regions that stop inside a block before the parent's end."""
    rng = np.random.default_rng(3)
    seen = {}
    for _ in range(400):
        tag = str(rng.choice(sorted(TAG_VALUES)))
        dims = [int(rng.choice([1, 2, 3, 8, 16, 20, 32])) for _ in range(_rank(tag))]
        if np.prod(dims) > 5000:
            continue
        offs = [int(rng.choice([0, 0, rng.integers(n + 1), rng.integers(n + 1) // 8 * 8,
                                16 if n > 16 else 0])) for n in dims]
        sub = [int(rng.integers(n - o + 1)) if rng.random() < 0.8 else n - o
               for n, o in zip(dims, offs)]
        if rng.random() < 0.05:
            sub[0] += 1
        d, md = make(dnnl, dims, tag)
        try:
            s, why = d.submemory(sub, offs), ""
        except ReorderError as e:
            s, why = None, str(e)
        try:
            smd = dnnl.submemory(md, sub, offs)
        except Refused:
            smd = None
        seen[s is not None, smd is not None] = seen.get((s is not None, smd is not None), 0) + 1
        case = (tag, dims, sub, offs)
        assert not (s is not None and smd is None), case
        if smd is not None and s is None:
            assert "inside a block" in why, case
        if s is not None:
            region = tuple(slice(o, o + n) for o, n in zip(offs, sub))
            assert np.array_equal(desc_offsets(s), dnnl.offsets(md)[region]), case
            info = dnnl.read(smd)
            assert np.array_equal(desc_offsets(s), dnnl.offsets(smd)), case
            assert s.offset0 == info["offset0"] and list(s.padded_dims) == info["padded_dims"]
        dnnl.close()
    assert seen.get((True, True), 0) > 100 and seen.get((False, False), 0) > 30
