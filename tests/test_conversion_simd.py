"""The SIMD conversion paths (AVX-512 and AVX2 tiles, SIMD rows of the strided walk, long
runs split between threads) against the independent reference in quant_reference.py, with
the path each check runs asserted; and plans with conversion attributes cached by their
structure, the values being arguments of each call.

Every mode the CPU can run is exercised: 1 (the widest SIMD), 2 (AVX-512 with the emulated
bf16), 3 (AVX2 where AVX-512 also exists) and 0 (portable loops)."""
import math

import numpy as np
import pytest

import reorder as ro
from reorder import _convert
from reorder.plan.cache import REORDER_CALLS_WITH_ATTRS, cached_plan
import quant_reference as qr
from quant_reference import bits
from simd_paths import convert_modes

AVX512 = _convert.simd_available()
AVX2 = _convert.avx2_available()


def expected_path(mode, ddt):
    """What a runner reports in `mode` on this CPU."""
    if mode == 0 or not (AVX512 or AVX2):
        return "portable"
    if mode == 3 or not AVX512:
        return "avx2"
    feats = _convert.cpu_features()
    return "avx512-bf16" if ddt == "bf16" and mode == 1 and feats["avx512 bf16"] else "avx512"


# images between nhwc and nchw stay with the conversion tiles here (on CPUs with AVX-512 the
# planner moves them with the interleave kernel first: test_conversions.py)
pytestmark = [pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning",
                                         "ignore:overflow:RuntimeWarning"),
              pytest.mark.usefixtures("transpose_few_columns")]


mode = convert_modes({1: "widest", 2: "avx512-bf16emu", 3: "avx2", 0: "portable"})


# the pairs of issue 16, part B (and their attributes)
PAIRS = [("f32", "bf16"), ("bf16", "f32"), ("f32", "f16"), ("f16", "f32"), ("f32", "s8"),
         ("f32", "u8"), ("s8", "f32"), ("u8", "f32")]


def special_f32(n, rng):
    """Rounding ties for every target, saturation edges, NaN, inf, denormals, signed zeros,
    and random values, repeated to n."""
    base = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 128.0, -128.5, -129.0,
                     254.5, 255.5, 256.0, -0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-40,
                     -1e-40, 1.00390625, 1.01171875, 3.4e38, -3.4e38, 65504.0, 65520.0,
                     6e-8, 2.98e-8, 1e9, -1e9], np.float32)
    out = np.resize(base, n)
    rnd = (rng.standard_normal(n) * 100).astype(np.float32)
    out[1::3] = rnd[1::3]                               # specials spread over every lane
    out[::53] = np.uint32(0x7FA00001).view(np.float32)  # a signalling NaN now and then
    return out


# the 16-bit patterns every bf16 / f16 source starts with: +-inf, a quiet and a signalling
# NaN, the smallest subnormal of each sign, -0, then +0 (bf16) or the largest subnormal (f16)
SPECIAL_16 = {"bf16": [0x7F80, 0xFF80, 0x7FC1, 0x7F81, 0x0001, 0x8001, 0x8000, 0x0000],
              "f16": [0x7C00, 0xFC00, 0x7E01, 0x7C01, 0x0001, 0x8001, 0x8000, 0x03FF]}


def source_values(sdt, n, rng):
    """n values in sdt's storage covering its special values."""
    if sdt == "f32":
        return special_f32(n, rng)
    if sdt in SPECIAL_16:
        special = np.array(SPECIAL_16[sdt], np.uint16)
        rest = rng.integers(0, 1 << 16, max(n - len(special), 0)).astype(np.uint16)
        u16 = np.concatenate([special, rest])[:n]
        return u16.view(np.float16) if sdt == "f16" else u16
    info = np.iinfo(qr.NUMPY[sdt])
    return rng.integers(info.min, info.max + 1, n).astype(qr.NUMPY[sdt])


def check(src_flat, dims, stag, dtag, sdt, ddt, *, threads=None, runner=None, path=None, **kw):
    """reorder() of a flat source against the reference; the runner type and path asserted
    on the plan the call used."""
    names = {"src_scales": "src_scales", "src_scale_mask": "src_mask", "dst_scales": "dst_scales",
             "dst_scale_mask": "dst_mask", "src_zero_point": "src_zp", "dst_zero_point": "dst_zp"}
    p = ro.plan(stag, dtag, dims=dims, src_dtype=sdt, dtype=ddt, **kw)
    conv = next(st.runner for st in p.steps if st.problem.attrs is not None)
    if runner is not None:
        assert type(conv).__name__ == runner, p.explain()
    if path is not None:
        assert conv.path == path, (conv.path, path)
    got = ro.reorder(src_flat, stag, dtag, dims=dims, src_dtype=sdt, dtype=ddt, threads=threads,
                     **kw)
    exp, _, _ = qr.ref_reorder(src_flat, dims, stag, dtag, sdt, ddt,
                               **{names[k]: v for k, v in kw.items()})
    np.testing.assert_array_equal(bits(got), bits(exp))
    return got


def attrs_for(sdt, ddt):
    """The attributes the benchmarks use for this pair, and a second set of values."""
    for side, dt in (("dst", ddt), ("src", sdt)):     # the integer side; dst first
        if dt in ("s8", "u8"):
            kw = {f"{side}_scales": 0.01}
            if dt == "u8":
                kw[f"{side}_zero_point"] = 128
            return kw
    return {}


# ---------------------------------------------------------------------------------------------
# plain layouts: the strided walk's SIMD rows

PLAIN = [(2, 19, 5, 7), (1, 1, 1, 1), (3, 16, 4, 4), (1, 3, 1, 1000), (2, 0, 3, 3)]


@pytest.mark.parametrize("dims", PLAIN, ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("sdt,ddt", PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_plain_rows(sdt, ddt, dims, mode):
    """nchw -> nchw: one fused contiguous run, through the SIMD row of `mode` (tails of every
    length below the vector width included), with and without attributes."""
    n = math.prod(dims)
    rng = np.random.default_rng(n + len(sdt) * 7 + len(ddt))
    src = source_values(sdt, n, rng)
    for kw in ({}, attrs_for(sdt, ddt)):
        check(src, dims, "abcd", "abcd", sdt, ddt, runner="Convert",
              path=expected_path(mode, ddt), **kw)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 200])
def test_row_tails(n, mode):
    """Every remainder of the 8- and 16-wide rows and of the 32-element steps, with a scale
    per element (mask over the run) so the per-element scale loads take tails too."""
    rng = np.random.default_rng(n)
    src = special_f32(n, rng)
    sc = (rng.random(n).astype(np.float32) + 0.5) * 4
    for ddt in ("bf16", "f16", "s8", "u8", "s32", "f64"):
        check(src, (n,), "a", "a", "f32", ddt, runner="Convert", dst_scales=sc,
              dst_scale_mask=1)
        check(src, (n,), "a", "a", "f32", ddt, runner="Convert", src_scales=sc,
              src_scale_mask=1)


def test_rows_per_channel_scales_and_sum(mode):
    """Per-channel scales on nchw (one value per run) and nhwc (one per element of the run),
    zero points on both sides, and sum reading the old destination, through the rows."""
    rng = np.random.default_rng(3)
    dims = (2, 21, 3, 5)
    n = math.prod(dims)
    sc = (rng.random(21).astype(np.float32) + 0.5) * 3
    x = source_values("f32", n, rng)
    for tag in ("abcd", "acdb"):
        for ddt in ("s8", "u8", "bf16", "f16", "f32"):
            kw = dict(src_scales=sc, src_scale_mask=2)
            if ddt in ("s8", "u8"):
                kw.update(dst_zero_point=3)
            check(x, dims, tag, tag, "f32", ddt, runner="Convert", **kw)
    q = rng.integers(0, 256, n).astype(np.uint8)
    check(q, dims, "abcd", "abcd", "u8", "f32", src_zero_point=128, src_scales=0.5,
          dst_scales=sc, dst_scale_mask=2)
    old = rng.integers(-128, 128, n).astype(np.int8)
    out = old.reshape(dims).copy()
    got = ro.reorder(x, "abcd", "abcd", dims=dims, dtype="s8", src_scales=0.25, sum_beta=0.5,
                     out=out)
    exp, _, _ = qr.ref_reorder(x, dims, "abcd", "abcd", "f32", "s8", src_scales=0.25, beta=0.5,
                               dst_old=old)
    np.testing.assert_array_equal(bits(got), bits(exp))


def test_plain_views(mode):
    """Strided, negative-stride and offset views: inner runs stay contiguous (rows) or not
    (the portable loop), every one against the reference."""
    rng = np.random.default_rng(5)
    base = special_f32(4 * 40 * 6 * 9, rng).reshape(4, 40, 6, 9)
    keep = base.copy()
    for view in (base[:, ::-1], base[1:3, 5:30], base[::-1, ::3, 1:, 2:], base[..., ::-1],
                 base[:, :, ::2]):
        for ddt in ("bf16", "s8"):
            got = ro.reorder(view, "nchw", "nchw", dtype=ddt, dst_scales=0.5)
            exp = qr.from_f32(view * np.float32(2.0), ddt)
            np.testing.assert_array_equal(bits(got), bits(exp))
    np.testing.assert_array_equal(bits(base), bits(keep))      # the input is untouched


@pytest.mark.parametrize("threads", [1, 2])
def test_long_run_pieces(threads, mode):
    """A single fused run long enough to be split between threads (pieces of whole 64-element
    groups, the last piece taking the rest): same bytes as the reference for every count."""
    rng = np.random.default_rng(9)
    n = 3 * 4096 * 7 + 37
    src = special_f32(n, rng)
    for ddt, kw in (("bf16", {}), ("s8", {"dst_scales": 0.03}), ("u8", {"dst_scales": 0.5,
                                                                       "dst_zero_point": 9})):
        check(src, (n,), "a", "a", "f32", ddt, threads=threads, runner="Convert", **kw)


# ---------------------------------------------------------------------------------------------
# layout changes: the tiles

# (dims, src tag, dst tag, the runner the planner picks). The tile needs 16 or more
# destination-contiguous lanes; with fewer the shapes go through the strided walk. Lanes that
# are not whole groups of 16 end in a group that overlaps the one before; 1-byte outputs take
# that only with enough lanes (convert.part_group_bytes_fit), else the walk ("ConvertTile*"
# below). More than 4096 lanes are cut into blocks of the longest multiple of 16 that
# divides them.
TILES = [((2, 35, 3, 6), "abcd", "aBcd16b", "ConvertTile"),    # padded C, 18 columns
         ((1, 16, 1, 9), "abcd", "aBcd16b", "ConvertTile"),    # 9 columns: one 8 + a tail
         ((1, 17, 4, 4), "aBcd16b", "abcd", "ConvertTile"),    # 16 lanes, padded c16 columns
         ((2, 40, 4, 8), "aBcd16b", "abcd", "ConvertTile"),    # 32 lanes, C=40
         ((2, 48, 3, 5), "abcd", "acdb", "ConvertTile"),       # 3 lane groups, 15 columns
         ((3, 32, 1, 1), "abcd", "acdb", "Convert"),           # size-1 spatial: a copy-like run
         ((2, 19, 5, 7), "abcd", "acdb", "ConvertTile*"),      # 19 lanes: 16 and 3..18
         ((2, 35, 3, 6), "aBcd16b", "abcd", "ConvertTile*"),   # 18 lanes: 16 and 2..17
         ((2, 35, 1, 15), "aBcd16b", "abcd", "Convert"),       # 15 lanes: the walk
         ((1, 20, 72, 72), "aBcd16b", "abcd", "ConvertTile"),  # 5184 lanes: 2 x 2592, C=20
         ((2, 3, 65, 64), "acdb", "abcd", "ConvertTile"),      # 4160 lanes: 2 x 2080
         ((1, 17, 65, 65), "aBcd16b", "abcd", "Convert"),      # 4225 lanes, odd: the walk
         ((1, 4100, 2, 3), "abcd", "aBcd4160b", "ConvertTile")]  # 4160 padded lanes: 2 x 2080


@pytest.mark.parametrize("dims,stag,dtag,runner", TILES,
                         ids=[f"{'x'.join(map(str, d))}-{s}-{t}" for d, s, t, _ in TILES])
@pytest.mark.parametrize("sdt,ddt", PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_tiles(sdt, ddt, dims, stag, dtag, runner, mode):
    """Channels not a multiple of 16 (invalid lanes, zero padding), columns not a multiple of
    8 or 16 (the tail through the stack copy), size-1 dims; the runner asserted."""
    n = math.prod(dims)
    rng = np.random.default_rng(n + 11 * len(stag))
    src = qr.place(source_values(sdt, n, rng), dims, stag, sdt)
    if runner == "ConvertTile*":
        runner = "Convert" if ddt in ("s8", "u8") else "ConvertTile"
    for kw in ({}, attrs_for(sdt, ddt)):
        check(src, dims, stag, dtag, sdt, ddt, runner=runner,
              path=expected_path(mode, ddt), **kw)


# 16-bit sources to f32 through the tiles: full chunks of a lane group transpose the words
# and widen each column (the AVX-512 body); lanes at one stride (nChw16c -> nchw) and from a
# table of two strides (OIhw4i16o4i: a group is 4 i by 4 o), columns in far and near planes.
WORD_TILES = [((2, 40, 4, 8), "aBcd16b", "abcd"),           # C=40: a last block of 8
              ((1, 32, 48, 48), "aBcd16b", "abcd"),         # 2304 lanes
              ((2, 48, 3, 5), "abcd", "acdb"),              # 15 columns: a partial chunk
              ((40, 24, 3, 3), "abcd", "ABcd4b16a4b")]      # padded O and I


@pytest.mark.parametrize("dims,stag,dtag", WORD_TILES,
                         ids=[f"{'x'.join(map(str, d))}-{s}-{t}" for d, s, t in WORD_TILES])
@pytest.mark.parametrize("sdt", ["bf16", "f16"])
def test_word_tiles_widen_after_the_transpose(sdt, dims, stag, dtag, mode):
    rng = np.random.default_rng(sum(dims) + len(sdt))
    src = qr.place(source_values(sdt, math.prod(dims), rng), dims, stag, sdt)
    check(src, dims, stag, dtag, sdt, "f32", runner="ConvertTile", path=expected_path(mode, "f32"))
    check(src, dims, stag, dtag, sdt, "f32", runner="ConvertTile", src_scales=0.5)


# Widening tiles into dst rows a multiple of 512 bytes apart walk B's columns first, every
# lane group at each (convert._widening_cols_first): f32 rows of 128 and 256 channels,
# 16-bit rows of 256 (scaled bytes), whole chunks of 16 columns; 64 channels of f32 (rows
# 256 bytes apart) keep the groups first.
WIDENING = [("bf16", "f32", (2, 128, 4, 8), {}), ("f16", "f32", (1, 256, 2, 16), {}),
            ("s8", "f32", (2, 128, 4, 8), {"src_scales": 0.5}),
            ("u8", "f32", (1, 256, 4, 4), {"src_scales": 0.25, "src_zero_point": 3}),
            ("u8", "f32", (2, 128, 4, 8), {}),
            ("s8", "bf16", (1, 256, 4, 8), {"src_scales": 0.5}),
            ("bf16", "f32", (2, 64, 4, 8), {})]


@pytest.mark.parametrize("sdt,ddt,dims,kw", WIDENING,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}" for s, d, n, _ in WIDENING])
def test_widening_tiles_columns_first(sdt, ddt, dims, kw, mode):
    p = ro.plan("abcd", "acdb", dims=dims, src_dtype=sdt, dtype=ddt, **kw)
    conv = p.runners[0]
    assert type(conv).__name__ == "ConvertTile", p.explain()
    assert conv.cols_first == (AVX512 and dims[1] * {"f32": 4, "bf16": 2}[ddt] % 512 == 0), \
        p.explain()
    rng = np.random.default_rng(sum(dims) + len(sdt))
    src = source_values(sdt, math.prod(dims), rng)
    for threads in (1, 2, 3):
        check(src, dims, "abcd", "acdb", sdt, ddt, threads=threads,
              path=expected_path(mode, ddt), **kw)


def test_tiles_per_lane_scales_and_sum(mode):
    """Per-channel scales vary across the 16 lanes of a tile; sum reads the old destination
    through the transposed path."""
    rng = np.random.default_rng(12)
    dims = (2, 37, 3, 16)
    n = math.prod(dims)
    x = source_values("f32", n, rng)
    sc = (rng.random(37).astype(np.float32) + 0.5) * 3
    for ddt in ("s8", "u8", "bf16", "f16"):
        check(x, dims, "abcd", "aBcd16b", "f32", ddt, runner="ConvertTile", src_scales=sc,
              src_scale_mask=2)
    old = qr.random_values(qr.nelems(dims, "aBcd16b"), "s8", rng)
    got = ro.reorder(x.reshape(dims), "nchw", "nChw16c", dtype="s8", src_scales=sc, src_scale_mask=2,
                     sum_beta=2.0, out=old.reshape(2, 3, 3, 16, 16).copy())
    exp, _, _ = qr.ref_reorder(x, dims, "abcd", "aBcd16b", "f32", "s8", src_scales=sc,
                               src_mask=2, beta=2.0, dst_old=old)
    np.testing.assert_array_equal(bits(got), bits(exp))


def test_avx2_detection_matches_the_cpu():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), None)
    except OSError:
        flags = None
    if not flags or "sse2" not in flags:
        pytest.skip("no x86 /proc/cpuinfo flags to compare with")
    assert AVX2 == ("avx2" in flags and "f16c" in flags)


def test_modes_are_checked():
    with pytest.raises(ValueError, match="bad SIMD mode"):
        _convert.set_simd(7)


# ---------------------------------------------------------------------------------------------
# plans with attributes: cached by structure, values per call

def test_second_call_with_other_values_hits_the_cache():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 24, 5, 5)).astype(np.float32) * 50
    kw = dict(dst_scale_mask=2, dst_zero_point=3)
    ro.reorder(x, "nchw", "nChw16c", dtype="u8", dst_scales=np.full(24, 0.5, np.float32), **kw)
    n_keys, info = len(REORDER_CALLS_WITH_ATTRS), cached_plan.cache_info()
    for trial in range(3):
        sc = (rng.random(24).astype(np.float32) + 0.1) * (trial + 1)
        got = ro.reorder(x, "nchw", "nChw16c", dtype="u8", dst_scales=sc, **kw)
        exp, _, _ = qr.ref_reorder(x.reshape(-1), x.shape, "abcd", "aBcd16b", "f32", "u8",
                                   dst_scales=sc, dst_mask=2, dst_zp=3)
        np.testing.assert_array_equal(bits(got), bits(exp))
    assert len(REORDER_CALLS_WITH_ATTRS) == n_keys
    after = cached_plan.cache_info()
    assert (after.hits, after.misses) == (info.hits, info.misses), "the call re-planned"
    # other zero points and a scalar scale of the same structure: also no new plan
    for zp, s in ((0, 0.25), (-7, 3.0)):
        got = ro.reorder(x, "nchw", "nchw", dtype="s8", src_scales=s, dst_zero_point=zp)
        exp, _, _ = qr.ref_reorder(x.reshape(-1), x.shape, "abcd", "abcd", "f32", "s8",
                                   src_scales=np.float32(s), dst_zp=zp)
        np.testing.assert_array_equal(bits(got), bits(exp))
    assert cached_plan.cache_info().misses == after.misses + 1


def test_plans_of_the_same_structure_share_their_steps():
    a = ro.plan("nchw", "nhwc", dims=(2, 20, 3, 3), dtype="s8", src_scales=0.5)
    b = ro.plan("nchw", "nhwc", dims=(2, 20, 3, 3), dtype="s8", src_scales=4.0)
    assert a is not b and a.steps is b.steps
    x = np.random.default_rng(2).standard_normal((2, 20, 3, 3)).astype(np.float32) * 30
    for p, s in ((a, 0.5), (b, 4.0), (a, 0.5)):
        exp = qr.from_f32(x.transpose(0, 2, 3, 1) * np.float32(s), "s8")
        np.testing.assert_array_equal(p(x), exp)
    assert "src scales 4" in b.explain() and "src scales 0.5" in a.explain()


def test_cached_calls_still_check_values():
    x = np.ones((2, 4, 3, 3), np.float32)
    ro.reorder(x, "nchw", "nchw", dtype="s8", dst_scales=0.5, dst_zero_point=1)
    with pytest.raises(TypeError, match="dst_zero_point must be an integer"):
        ro.reorder(x, "nchw", "nchw", dtype="s8", dst_scales=0.5, dst_zero_point=1.5)
    with pytest.raises(ValueError, match="does not fit in s32"):
        ro.reorder(x, "nchw", "nchw", dtype="s8", dst_scales=0.5, dst_zero_point=2**40)
    ro.reorder(x, "nchw", "nchw", dtype="s8", dst_scales=np.array([0.5, 1, 2, 4], np.float32),
               dst_scale_mask=2)
    with pytest.raises(TypeError, match="dst_scales must be a number"):
        ro.reorder(x, "nchw", "nchw", dtype="s8", dst_scales=np.array(["a", "b", "c", "d"]),
                   dst_scale_mask=2)
    with pytest.raises(TypeError, match="src_scale_mask must be an int"):
        ro.reorder(x, "nchw", "nchw", dtype="s8", src_scales=0.5, src_scale_mask=True)
    ro.reorder(x, "nchw", "nchw", dtype="f32", sum_beta=1.0, out=np.zeros_like(x))
    with pytest.raises(TypeError, match="sum_beta must be a number"):
        ro.reorder(x, "nchw", "nchw", dtype="f32", sum_beta="1", out=np.zeros_like(x))
