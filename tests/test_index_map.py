"""Index maps (TVM's transform_layout functions): an independent numpy reference that evaluates
the user's own lambda on index arrays and scatters, and TVM itself (`tvm.tirx.IndexMap`)."""
import itertools
import os
import re
from pathlib import Path

import numpy as np
import pytest

import reorder as ro
from reorder import AXIS_SEPARATOR as SEP, IndexMap, ReorderError

H5, W7 = 5, 7


def mace_channel_major(H, W):
    # MACE's channel-major image as a map (n, h, w, c) -> (y, x, lane): a closure over H, W
    return lambda n, h, w, c: [n * H + h, (c // 4) * W + w, c % 4]


# name, function, [(input shape, expected output shape before separators)]
CASES = [
    ("nChw4c", lambda n, c, h, w: [n, c // 4, h, w, c % 4],
     [((2, 12, 5, 7), (2, 3, 5, 7, 4)), ((1, 10, 5, 7), (1, 3, 5, 7, 4)),
      ((3, 1, 1, 2), (3, 1, 1, 2, 4)), ((2, 0, 3, 3), (2, 0, 3, 3, 4))]),
    ("merge_ij", lambda i, j, k: [i * 64 + j, k // 4, k % 4],
     [((3, 64, 12), (192, 3, 4)), ((3, 50, 10), (192, 3, 4)), ((1, 100, 8), (100, 2, 4)),
      ((2, 64, 0), (128, 0, 4))]),
    ("split_i_merge_jk", lambda i, j, k: [i // 4, 128 * j + k, i % 4],
     [((8, 3, 128), (2, 384, 4)), ((10, 2, 100), (3, 256, 4)), ((5, 1, 1), (2, 128, 4))]),
    ("texture", lambda n, c, h, w: [n, c // 4, h, SEP, w, c % 4],
     [((1, 12, 5, 7), (1, 3, 5, 7, 4)), ((1, 10, 5, 7), (1, 3, 5, 7, 4)),
      ((2, 8, 3, 1), (2, 2, 3, 1, 4))]),
    ("blocks_reversed", lambda i, j: [i // 16, j, i % 4, i // 4 % 4],
     [((48, 3), (3, 3, 4, 4)), ((40, 2), (3, 2, 4, 4))]),
    ("mace_image", mace_channel_major(H5, W7),
     [((1, 5, 7, 12), (5, 21, 4)), ((2, 5, 7, 10), (10, 21, 4))]),
]
SHAPES = [(name, fn, shape, out) for name, fn, shapes in CASES for shape, out in shapes]
IDS = [f"{name}-{'x'.join(map(str, shape))}" for name, _, shape, _ in SHAPES]


def plain(fn, idx):
    """The user's lambda on plain values, separators dropped."""
    return [v for v in fn(*idx) if v is not SEP]


def groups(fn, nd):
    """Output axis counts per separator group, read from the lambda's own result."""
    res = fn(*([0] * nd))
    cuts, k = [], 0
    for v in res:
        if v is SEP:
            cuts.append(k)
        else:
            k += 1
    return cuts


def reference(x, fn, out_shape, pad):
    """Scatter every element to the coordinate the lambda gives (numpy index arrays), into an
    array of out_shape prefilled with pad; each output coordinate must be hit at most once."""
    res = np.full(out_shape, pad, dtype=x.dtype)
    if x.size:
        coords = plain(fn, np.indices(x.shape))
        flat = np.ravel_multi_index(tuple(c.ravel() for c in coords), out_shape)
        assert len(np.unique(flat)) == flat.size, "map not injective"
        res.reshape(-1)[flat] = x.ravel()
    seps = groups(fn, x.ndim)
    if not seps:                # TVM's map_tensor: every output axis kept
        return res
    cuts = [0] + seps + [len(out_shape)]
    return res.reshape([int(np.prod(out_shape[a:b])) for a, b in zip(cuts, cuts[1:])])


def source(shape, dtype, kind):
    n = int(np.prod(shape))
    base = (np.arange(max(n, 1) * 4) % 251 + 1).astype(dtype)
    if kind == "contiguous":
        return base[:n].reshape(shape)
    if kind == "strided":       # every other element of a twice-as-long last axis
        big = shape[:-1] + (shape[-1] * 2,)
        return base[:int(np.prod(big))].reshape(big)[..., ::2]
    if kind == "negative":
        return base[:n].reshape(shape)[..., ::-1]
    if kind == "offset":        # starts one element into its buffer
        return base[1:n + 1].reshape(shape)
    raise AssertionError(kind)


PAD = {np.float32: -2.5, np.uint8: 201, np.float16: 1.5}


@pytest.mark.parametrize("name,fn,shape,out_shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.float16])
@pytest.mark.parametrize("kind", ["contiguous", "strided", "negative", "offset"])
def test_transform_matches_reference(name, fn, shape, out_shape, dtype, kind):
    x = source(shape, dtype, kind)
    before = x.copy()
    m = IndexMap.from_func(fn)
    assert tuple(m.map_shape(shape)) == out_shape
    for pad in (0, PAD[dtype]):
        got = ro.transform_layout(x, fn, pad_value=pad)
        want = reference(x, fn, out_shape, pad)
        assert got.shape == want.shape and got.dtype == x.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert np.array_equal(x, before)


@pytest.mark.parametrize("name,fn,shape,out_shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_out_prefilled_with_sentinel(name, fn, shape, out_shape, threads):
    # every byte of out is written: zero padding included, whatever out held
    x = source(shape, np.float32, "contiguous")
    want = reference(x, fn, out_shape, 0)
    out = np.full(want.shape, np.nan, np.float32)
    got = ro.transform_layout(x, fn, out=out, threads=threads)
    assert got is out
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("name,fn,shape,out_shape", SHAPES, ids=IDS)
def test_map_indices_is_the_lambda(name, fn, shape, out_shape):
    m = IndexMap.from_func(fn)
    for idx in itertools.product(*(range(min(n, 9)) for n in shape)):
        assert m.map_indices(idx) == plain(fn, idx)


@pytest.mark.parametrize("name,fn,shape,out_shape", SHAPES, ids=IDS)
def test_inverse_round_trip(name, fn, shape, out_shape):
    m = IndexMap.from_func(fn)
    inv, padding = m.non_surjective_inverse(shape)
    assert m.inverse(shape) == inv and repr(inv.padding) == repr(padding)
    images = {tuple(plain(fn, idx)) for idx in itertools.product(*map(range, shape))}
    mask = padding.mask(out_shape)
    for out in itertools.product(*map(range, out_shape)):
        if out in images:
            back = inv.map_indices(out)
            assert not padding(out) and not mask[out]
            assert tuple(plain(fn, back)) == out and all(0 <= b < n for b, n in zip(back, shape))
        else:
            assert padding(out) and mask[out], (out, padding)
    # and through the planner: the inverse brings the data back (padding trimmed); an index
    # of size 1 inside a merge comes back as the constant 0, which is no layout
    if any(repr(e) == "0" for e in inv.final_indices):
        return
    x = source(shape, np.float32, "contiguous")
    y = ro.transform_layout(x, m.without_separators() if m.axis_separators else m)
    back = ro.transform_layout(y, inv)
    assert back.shape == tuple(np.array(inv.map_shape(out_shape)))
    np.testing.assert_array_equal(back[tuple(slice(0, n) for n in shape)], x)


def test_tag_equivalent_map_is_the_tag_plan():
    x = np.random.default_rng(0).random((2, 10, 5, 7), dtype=np.float32)
    m = IndexMap.from_func(lambda n, c, h, w: [n, c // 4, h, w, c % 4])
    assert m.desc(x.shape) == ro.Desc(x.shape, "f32", "nChw4c")
    assert ro.plan(ro.Desc.of(x), m) is ro.plan(ro.Desc.of(x), "nChw4c")
    assert ro.plan(ro.Desc.of(x), lambda n, c, h, w: [n, c // 4, h, w, c % 4]) is \
        ro.plan(ro.Desc.of(x), "nChw4c")
    np.testing.assert_array_equal(ro.transform_layout(x, m), ro.reorder(x, "nchw", "nChw4c"))
    # OIhw16i16o spelled as a map
    w = np.random.default_rng(1).random((20, 17, 3, 3), dtype=np.float32)
    mw = IndexMap.from_func(lambda o, i, h, w: [o // 16, i // 16, h, w, i % 16, o % 16])
    assert ro.plan(ro.Desc.of(w), mw) is ro.plan(ro.Desc.of(w), "OIhw16i16o")


def test_merge_is_the_strided_merge():
    m = IndexMap.from_func(lambda i, j, k: [i * 64 + j, k // 4, k % 4])
    d = m.desc((3, 64, 12))
    assert d.physical_shape == (3, 64, 3, 4) and d.is_dense and d.is_c_contiguous
    assert d.strides == (64 * 12, 12, 4)


def test_closure_is_traced_each_call():
    x = np.arange(2 * 3 * 4 * 8, dtype=np.float32).reshape(2, 3, 4, 8)
    H = 3
    fn = lambda n, h, w, c: [n * H + h, (c // 4) * 4 + w, c % 4]     # noqa: E731
    a = ro.transform_layout(x, fn)
    H = 5                           # the same function object now means another map
    b = ro.transform_layout(x, fn)
    assert a.shape == (6, 8, 4) and b.shape == (10, 8, 4)
    np.testing.assert_array_equal(b, reference(x, fn, (10, 8, 4), 0))


def test_is_index_map():
    """The one test every front end uses to tell an index map from a tag, a Desc or a kind."""
    from reorder.core.index_map import is_index_map
    from reorder import opencl as rocl
    m = IndexMap.from_func(lambda n, c, h, w: [n, c // 4, h, w, c % 4])
    assert is_index_map(m)
    assert is_index_map(lambda n, c, h, w: [n, h, w, c])
    assert not is_index_map("nChw4c")
    assert not is_index_map(ro.Desc((2, 8, 3, 3), "f32", "nchw"))
    assert not is_index_map(rocl.KINDS["channel"])
    assert not is_index_map(rocl.MNN_KINDS["conv2d_filter"])


def test_repr_equality_hash():
    m = IndexMap.from_func(lambda n, c, h, w: [n, c // 4, h, SEP, w, c % 4])
    assert repr(m) == "lambda n, c, h, w: [n, c // 4, h, AXIS_SEPARATOR, w, c % 4]"
    assert m.axis_separators == (3,)
    a = IndexMap.from_func(lambda i, j: [i * 64 + j])
    b = IndexMap.from_func(lambda x, y: [y + 64 * x])
    assert a == b and hash(a) == hash(b) and repr(b) == "lambda x, y: [y + 64 * x]"
    assert a != IndexMap.from_func(lambda i, j: [i * 32 + j])
    star = IndexMap.from_func(lambda *ix: [ix[1], ix[0]], ndim=2)
    assert star == IndexMap.from_func(lambda i, j: [j, i])
    assert IndexMap.from_func(lambda i: i // 4 * 4 + i % 4).map_shape([10]) == [12]


BAD_MAPS = [
    (lambda i, j: [i * j], "`i * j`"),
    (lambda i, j: [i // j], "`i // j`"),
    (lambda c: [c // 4], "`c // 4` without `c % 4`"),
    (lambda c: [c % 4], "`c % 4` without `c // 4`"),
    (lambda c: [c // 4, c], "not injective"),
    (lambda i, j: [i, i], "index j does not appear"),
    (lambda i, j: [(i * 64 + j) // 4, j % 4], "`(i * 64 + j) // 4`"),
    (lambda i, j: [SEP, i, j], "AXIS_SEPARATOR at the start"),
    (lambda i, j: [i, j, SEP], "AXIS_SEPARATOR at the end"),
    (lambda i, j: [i, SEP, SEP, j], "AXIS_SEPARATOR twice in a row"),
    (lambda i: [i + 1], "`i + 1`"),
    (lambda i: [i // 0], "`i // 0`"),
    (lambda i: [i % -4], "`i % -4`"),
    (lambda i: [i - 1], "`i - 1`"),
    (lambda i: [i // 4 % 3, i % 4, i // 16], "`i // 16` does not follow `i // 4 % 3`"),
    (lambda c: [c % 6 // 4], "`c % 6 // 4`"),
    (lambda i: [i if i else 0], "condition"),
]


@pytest.mark.parametrize("fn,part", BAD_MAPS, ids=[p for _, p in BAD_MAPS])
def test_bad_maps_quote_the_part(fn, part):
    with pytest.raises(ReorderError, match=None) as e:
        IndexMap.from_func(fn)
    assert part in str(e.value), str(e.value)


def test_bad_map_for_a_shape():
    m = IndexMap.from_func(lambda i, j: [i * 64 + j])
    with pytest.raises(ReorderError, match=r"`i \* 64 \+ j` is not injective for shape \(3, 100\)"):
        m.map_shape((3, 100))
    with pytest.raises(ReorderError, match=r"`2 \* i` multiplies its lowest term by 2"):
        ro.transform_layout(np.zeros((4, 3), np.float32), lambda i, j: [2 * i, j])
    with pytest.raises(ReorderError, match=r"leave gaps"):
        IndexMap.from_func(lambda i, j: [(i % 4) * 8 + j % 4, j // 4, i // 4]).map_shape((8, 3))
    # a gap above an outer digit is padding of that index, not an error
    assert IndexMap.from_func(lambda i, j: [(i % 4) * 8 + j, i // 4]).map_shape((8, 3)) == [32, 2]


def test_bad_arguments():
    x = np.zeros((2, 10, 3, 3), np.uint8)
    fn = lambda n, c, h, w: [n, c // 4, h, w, c % 4]         # noqa: E731
    for bad, err, part in [(256, ReorderError, "does not fit"), (-1, ReorderError, "does not fit"),
                           (1.5, ReorderError, "not an integer"), ("a", TypeError, "number"),
                           (True, TypeError, "bool")]:
        with pytest.raises(err, match=part):
            ro.transform_layout(x, fn, pad_value=bad)
    with pytest.raises(ReorderError, match="overflows"):
        ro.transform_layout(x.astype(np.float16), fn, pad_value=1e6)
    with pytest.raises(ReorderError, match="takes 4 indices but the array has 3 axes"):
        ro.transform_layout(x[0], fn)
    with pytest.raises(ReorderError, match=r"out has shape 2x3x3x3x3"):
        ro.transform_layout(x, fn, out=np.zeros((2, 3, 3, 3, 3), np.uint8))
    with pytest.raises(ReorderError, match="overlaps"):
        big = np.zeros(2 * 12 * 9 + 10, np.uint8)
        ro.transform_layout(big[:180].reshape(2, 10, 3, 3), fn,
                            out=big[:216].reshape(2, 3, 3, 3, 4))
    with pytest.raises(ReorderError, match="ndim="):
        IndexMap.from_func(lambda *a: list(a))
    with pytest.raises(TypeError):
        IndexMap.from_func(42)
    # a pad value the dtype holds exactly: s32 extremes, f16 infinity, NaN
    y = ro.transform_layout(np.ones((1, 2, 1, 1), np.int32), fn, pad_value=-2**31)
    assert (y[0, 0, 0, 0] == [1, 1, -2**31, -2**31]).all()
    z = ro.transform_layout(np.ones((1, 2, 1, 1), np.float16), fn, pad_value=float("nan"))
    assert np.isnan(z[0, 0, 0, 0, 2:]).all()


# ---------------------------------------------------------------------------------------------
# against TVM

def _tvm():
    try:
        import tvm
        import tvm.tirx  # noqa: F401
        return tvm
    except Exception as e:          # the wheel missing or failing to load
        if os.environ.get("CI"):
            raise
        pytest.skip(f"apache-tvm>=0.27 (tvm.tirx) cannot be imported here: {e}")


def _ints(exprs):
    return [int(e) for e in exprs]


def _tvm_map(tvm, fn, nd):
    return tvm.tirx.IndexMap.from_func(lambda *a: plain(fn, a), ndim=nd)


def _divides(shape, out_shape, fn):
    """True when every output coordinate has an input (TVM's map_tensor cannot pad)."""
    return int(np.prod(shape)) == int(np.prod(out_shape))


@pytest.mark.parametrize("name,fn,shape,out_shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_against_tvm(name, fn, shape, out_shape, dtype):
    tvm = _tvm()
    if 0 in shape:
        pytest.skip("TVM's runtime tensors of zero size are not compared")
    tm = _tvm_map(tvm, fn, len(shape))
    ours = IndexMap.from_func(fn)
    tvm_shape = tuple(_ints(tm.map_shape(list(shape))))
    merge_gap = name in ("merge_ij", "split_i_merge_jk") and not _divides(shape, out_shape, fn)
    if merge_gap:
        # TVM's interval fallback gives the tight bound; we give the padded layout
        assert all(t <= o for t, o in zip(tvm_shape, out_shape))
    else:
        assert tvm_shape == out_shape
    for idx in itertools.product(*(range(min(n, 6)) for n in shape)):
        assert _ints(tm.map_indices(list(idx))) == ours.map_indices(idx)
    x = source(shape, dtype, "contiguous")
    if _divides(shape, out_shape, fn):
        our_inv = ours.inverse(shape)
        assert not our_inv.padding
        try:
            inv = tm.inverse(list(shape))
        except tvm.error.InternalError:
            # TVM cannot invert a merge whose upper index has size 1 (i * 64 + j, one i and
            # 100 j); ours is checked by test_inverse_round_trip
            assert name == "merge_ij" and shape[0] == 1
            inv = None
        for out in itertools.islice(itertools.product(*map(range, out_shape)), 0, None, 7):
            if inv is not None:
                assert _ints(inv.map_indices(list(out))) == our_inv.map_indices(out)
        want = tm.map_tensor(tvm.runtime.tensor(x)).numpy()
        got = ro.transform_layout(x, fn)
        np.testing.assert_array_equal(got.reshape(want.shape), want)
        assert got.shape == reference(x, fn, out_shape, 0).shape
    elif not merge_gap:
        # padding: TVM's predicate and inverse agree with ours on every output coordinate
        tinv, pred = tm.non_surjective_inverse(list(shape))
        our_inv, padding = ours.non_surjective_inverse(shape)
        # the predicate evaluated by TVM itself: as a one-output map over the same indices
        pmap = tvm.tirx.IndexMap(tinv.initial_indices, [pred], None)
        for out in itertools.product(*map(range, out_shape)):
            assert bool(int(pmap.map_indices(list(out))[0])) == padding(out), out
            if not padding(out):
                assert _ints(tinv.map_indices(list(out))) == our_inv.map_indices(out)


def test_docs_page_examples_run():
    page = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "index-maps.md"
    names = {}                  # the page's blocks run in order, as one session
    for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
        exec(compile(block, str(page), "exec"), names)


# ---------------------------------------------------------------------------------------------
# images: an index map with one separator and 4 lanes last describes an RGBA image

# MACE's image kinds spelled as maps over their logical dims (n, c, h, w / o, i, h, w / m, i, h, w)
IMAGE_MAPS = [
    ("channel", lambda n, c, h, w: [n, h, SEP, c // 4, w, c % 4]),
    ("height", lambda n, c, h, w: [n, h // 4, SEP, c, w, h % 4]),
    ("width", lambda n, c, h, w: [n, h, SEP, c, w // 4, w % 4]),
    ("conv2d_filter", lambda o, i, h, w: [o // 4, h, w, SEP, i, o % 4]),
    ("dw_conv2d_filter", lambda m, i, h, w: [m, i // 4, SEP, h, w, i % 4]),
    ("weight_height", lambda o, i, h, w: [o // 4, SEP, h, w, i, o % 4]),
    ("weight_width", lambda o, i, h, w: [o, SEP, h, w, i // 4, i % 4]),
]


def image_reference(x, fn):
    """(height, width, 4) image from the lambda: rows and columns are the two separator
    groups flattened, lanes the last output."""
    m = IndexMap.from_func(fn)
    out = tuple(m.map_shape(x.shape))
    flat = reference(x, fn, out, 0)
    return flat.reshape(flat.shape[0], flat.shape[1] // 4, 4)


@pytest.mark.parametrize("kind,fn", IMAGE_MAPS, ids=[k for k, _ in IMAGE_MAPS])
@pytest.mark.parametrize("shape", [(2, 10, 5, 7), (1, 3, 1, 1), (1, 17, 3, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_image_map_is_the_mace_kind(kind, fn, shape, dtype):
    from reorder import opencl as rocl
    if kind == "dw_conv2d_filter":
        shape = (1,) + shape[1:]            # multiplier 1 only
    x = source(shape, dtype, "contiguous")
    want = rocl.to_image_array(x, kind)
    got = rocl.to_image_array(x, fn)
    assert got.shape == want.shape == image_reference(x, fn).shape
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(got.view(np.uint16), image_reference(x, fn).view(np.uint16))
    assert rocl.image_shape(kind, shape) == (got.shape[1], got.shape[0])
    np.testing.assert_array_equal(rocl.from_image_array(got, fn, shape), x)


def test_rfc_texture_map_is_tvm_texture_not_mace():
    """The RFC's texture [n, c // 4, h | w, c % 4] is TVM's nChw4c texture (rows n, c // 4, h;
    columns w): the nChw4c array, flattened. No MACE kind has that order (MACE's channel-major
    puts the channel blocks across the columns)."""
    from reorder import opencl as rocl
    rfc = lambda n, c, h, w: [n, c // 4, h, SEP, w, c % 4]        # noqa: E731
    x = source((2, 10, 5, 7), np.float32, "contiguous")
    got = rocl.to_image_array(x, rfc)
    assert got.shape == (2 * 3 * 5, 7, 4)
    np.testing.assert_array_equal(got.reshape(-1), ro.reorder(x, "nchw", "nChw4c").reshape(-1))
    np.testing.assert_array_equal(got, image_reference(x, rfc))
    assert not np.array_equal(got.shape, rocl.to_image_array(x, "channel").shape)
    np.testing.assert_array_equal(rocl.from_image_array(got, rfc, x.shape), x)


def test_bad_image_maps():
    from reorder import opencl as rocl
    x = np.zeros((1, 8, 2, 2), np.float32)
    with pytest.raises(ReorderError, match="one AXIS_SEPARATOR"):
        rocl.to_image_array(x, lambda n, c, h, w: [n, c // 4, h, w, c % 4])
    with pytest.raises(ReorderError, match="4 RGBA lanes"):
        rocl.to_image_array(x, lambda n, c, h, w: [n, c // 8, h, SEP, w, c % 8])
    with pytest.raises(ReorderError, match="layout= does not apply"):
        rocl.to_image_array(x, IMAGE_MAPS[0][1], layout="nhwc")
