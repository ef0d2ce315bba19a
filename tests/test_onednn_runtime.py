"""Asking a real oneDNN (the onednn-cpu-gomp wheel, or $ONEDNN_LIB) for weights layouts, and
proving that weights written by reorder's kernels into the answer are what its primitives read:
the same bytes as oneDNN's own reorder, and bit-identical outputs. No ISA is assumed: every
expectation is what the library answers on the machine running the test."""
import ctypes.util

import numpy as np
import pytest

import reorder
from reorder.models import onednn_runtime as R

from onednn_consume import onednn_reordered, random_src, run, weight_mask

LIB = R.library()
needs_lib = pytest.mark.skipif(LIB is None, reason="oneDNN not installed (pip install "
                                                   "onednn-cpu-gomp, the test extra)")
_ABC = "abcdefghijkl"


def conv(c, h, o, k, s=1, g=1, dt="f32", lay="nhwc", n=1, w=None, zp=False):
    w = h if w is None else w
    return R.make_layer("conv", (n, c, h, w), (o, c // g, k, k), strides=s,
                        pads=[k // 2] * 4, groups=g, src_dtype=dt, src_layout=lay,
                        src_zero_point=zp)


FLOAT_LAYERS = [conv(3, 32, 16, 7, 2), conv(16, 14, 24, 1), conv(64, 7, 64, 3),
                conv(24, 9, 24, 3, g=24), conv(16, 8, 16, 3, g=2), conv(26, 6, 26, 3, g=2),
                conv(3, 20, 8, 3, lay="nchw"),
                R.make_layer("deconv", (1, 16, 5, 5), (16, 8, 4, 4), strides=2, pads=1),
                R.make_layer("ip", (2, 40), (10, 40)),
                R.make_layer("matmul", (3, 40), (40, 10)),
                R.make_layer("conv", (1, 8, 30), (16, 8, 3), pads=1),                # 1-D
                R.make_layer("conv", (1, 8, 5, 6, 6), (16, 8, 3, 3, 3), pads=1),     # 3-D
                R.make_layer("conv", (1, 16, 12, 12), (16, 16, 3, 3), pads=2, dilations=2),
                R.make_layer("deconv", (1, 32, 6, 6), (32, 2, 4, 4), strides=2, pads=1,
                             groups=16)]
INT8_LAYERS = [conv(3, 32, 16, 7, 2, dt="u8"), conv(16, 14, 24, 1, dt="u8"),
               conv(64, 7, 64, 3, dt="s8"), conv(24, 9, 24, 3, g=24, dt="s8"),
               conv(24, 9, 24, 3, g=24, dt="u8"), conv(16, 8, 16, 3, g=2, dt="s8"),
               conv(32, 8, 32, 3, g=4, dt="u8"), conv(16, 8, 32, 3, dt="s8", zp=True),
               R.make_layer("deconv", (1, 16, 5, 5), (16, 8, 4, 4), strides=2, pads=1,
                            src_dtype="u8"),
               R.make_layer("ip", (2, 40), (10, 40), src_dtype="u8"),
               R.make_layer("matmul", (3, 40), (40, 10), src_dtype="s8"),
               R.make_layer("conv", (1, 8, 5, 6, 6), (16, 8, 3, 3, 3), pads=1, src_dtype="s8"),
               R.make_layer("conv", (1, 16, 12, 12), (16, 16, 3, 3), pads=2, dilations=2,
                            src_dtype="u8"),
               R.make_layer("deconv", (1, 32, 6, 6), (32, 1, 3, 3), pads=1, groups=32,
                            src_dtype="u8")]


def plain(layer):
    return _ABC[:len(layer.weights_dims)]


def ours_f32(lr, w):
    data = reorder.reorder(w, plain_tag(w), lr.tag)
    buf = np.zeros(lr.size, np.uint8)
    buf[:data.nbytes] = data.reshape(-1).view(np.uint8)
    return buf


def plain_tag(w):
    return _ABC[:w.ndim]


def int8_weights(layer, lr, rng):
    w = rng.standard_normal(layer.weights_dims).astype(np.float32)
    mask = weight_mask(layer)
    keep = [d for d in range(w.ndim) if mask >> d & 1]
    axes = tuple(d for d in range(w.ndim) if d not in keep)
    amax = np.abs(w).max(axis=axes).reshape(-1)
    mult = (np.float32(127.0) / amax).astype(np.float32)
    comp = lr.compensation[0] if len(lr.compensation) == 1 else (lr.compensation or None)
    q = reorder.quantize(w, plain_tag(w), lr.tag, scales=mult, scale_mask=mask,
                         compensation=comp, comp_mask=lr.comp_mask if comp else None,
                         scale_adjust=lr.scale_adjust)
    return w, mult, q


@needs_lib
def test_library_is_oneDNN_3():
    assert LIB.version[0] == 3
    assert LIB.isa in R.ISA_VALUES


def test_not_onednn_is_a_clear_error(tmp_path):
    libm = ctypes.util.find_library("m")
    with pytest.raises(R.OnednnError, match="is not oneDNN"):
        R.Library(libm)
    missing = tmp_path / "libdnnl.so.3"
    with pytest.raises(R.OnednnError, match=str(missing)):
        R.Library(missing)


def test_environment_variable_names_the_library(monkeypatch, tmp_path):
    monkeypatch.setenv("ONEDNN_LIB", str(tmp_path / "x.so"))
    assert R.find_library() == str(tmp_path / "x.so")
    assert R.find_library("/given/libdnnl.so.3") == "/given/libdnnl.so.3"


@needs_lib
@pytest.mark.parametrize("layer", FLOAT_LAYERS + INT8_LAYERS, ids=lambda l: l.describe())
def test_query_reads_back_a_dense_tag(layer):
    lr = LIB.query(layer)
    d = reorder.Desc(lr.dims, lr.dtype, lr.tag)
    assert d.nbytes == lr.data_size and tuple(d.padded_dims) == lr.padded_dims
    assert lr.dims == layer.weights_dims
    assert lr.version.startswith("3.") and lr.implementation


@needs_lib
@pytest.mark.parametrize("layer", FLOAT_LAYERS, ids=lambda l: l.describe())
def test_f32_weights_are_what_the_primitive_reads(layer):
    rng = np.random.default_rng(1)
    lr = LIB.query(layer)
    w = rng.standard_normal(layer.weights_dims).astype(np.float32)
    ours, theirs = ours_f32(lr, w), onednn_reordered(LIB, layer, w)
    assert ours.tobytes() == theirs.tobytes()
    src = random_src(layer, rng)
    a, b = run(LIB, layer, ours, src), run(LIB, layer, theirs, src)
    assert not np.isnan(a).any()
    assert a.tobytes() == b.tobytes()


@needs_lib
@pytest.mark.parametrize("layer", INT8_LAYERS, ids=lambda l: l.describe())
def test_int8_weights_scales_and_compensation(layer):
    """Our quantize() into the queried layout, with the derived compensation and scale_adjust,
    gives oneDNN's own reorder's bytes (weights and compensation) and its outputs."""
    if layer.src_zero_point:
        pytest.skip("a source zero point: the primitive needs its value at run time")
    rng = np.random.default_rng(2)
    lr = LIB.query(layer)
    w, mult, q = int8_weights(layer, lr, rng)
    ours = np.zeros(lr.size, np.uint8)
    b = q.to_onednn_buffer()
    ours[:b.size] = b
    theirs = onednn_reordered(LIB, layer, w, mult)
    n = b.size
    assert ours[:n].tobytes() == theirs[:n].tobytes()
    src = random_src(layer, rng)
    scales = (np.float32(1) / mult).astype(np.float32)
    x = run(LIB, layer, ours, src, 0.05, scales)
    y = run(LIB, layer, theirs, src, 0.05, scales)
    assert not np.isnan(x).any()
    assert x.tobytes() == y.tobytes()


@needs_lib
def test_compensation_rule_matches_the_reported_size():
    """The extra part cannot be read through oneDNN 3.x's query API; it is derived. An s8
    source asks for s8s8 compensation (a u8 one for none), a zero point for the zp one."""
    s8 = LIB.query(conv(64, 7, 64, 3, dt="s8"))
    u8 = LIB.query(conv(64, 7, 64, 3, dt="u8"))
    assert u8.compensation == () and u8.size == u8.data_size
    if s8.size > s8.data_size:         # a kernel that keeps compensation in the weights
        assert s8.compensation == ("s8s8",) and s8.comp_mask == 1
        assert s8.scale_adjust in (0.5, 1.0)
    zp = LIB.query(conv(16, 8, 32, 3, dt="s8", zp=True))
    if zp.size > zp.data_size:
        assert set(zp.compensation) == {"s8s8", "zp"}


@needs_lib
def test_helper_and_cache():
    a = reorder.onednn_weights_layout("conv", (1, 32, 28, 28), (64, 32, 3, 3), pads=1)
    b = reorder.onednn_weights_layout("conv", (1, 32, 28, 28), (64, 32, 3, 3), pads=1)
    assert a is b                                   # cached per (layer, library)
    assert a.dims == (64, 32, 3, 3) and a.isa == LIB.isa


@needs_lib
def test_lower_isa_runs_in_a_child():
    r = reorder.onednn_weights_layout("conv", (1, 32, 28, 28), (64, 32, 3, 3), pads=1,
                                      src_dtype="s8", isa="sse41")
    assert r.isa == "sse41" and "sse41" in r.implementation


@needs_lib
def test_higher_isa_warns_and_gives_no_answer():
    top = "avx10_1_512_amx_fp16"
    if R.isa_at_most(top, LIB.isa_value):
        pytest.skip("this machine runs every ISA oneDNN 3.2 knows")
    with pytest.warns(UserWarning, match="can only lower"):
        assert reorder.onednn_weights_layout("conv", (1, 8, 8, 8), (8, 8, 3, 3),
                                             isa=top) is None


@needs_lib
def test_refused_layer_names_it():
    # a dilation that reads past the padded input: no implementation exists
    with pytest.raises(R.OnednnError, match="conv src"):
        LIB.query(R.Layer("conv", (1, 8, 4, 4), (8, 8, 3, 3), (1, 8, 4, 4), (1, 1),
                          (0, 0, 0, 0), (1, 1), 1, "f32", "nhwc"))


@pytest.mark.parametrize("kw, err", [
    (dict(kind="pool"), ValueError), (dict(src_dtype="f16"), ValueError),
    (dict(src_layout="chwn"), ValueError), (dict(strides="x"), TypeError),
    (dict(groups=0), ValueError), (dict(weights_dims=(8, 5, 3, 3)), ValueError),
    (dict(pads=(1, 1)), ValueError)])
def test_helper_bad_input(kw, err):
    args = dict(kind="conv", src_dims=(1, 8, 8, 8), weights_dims=(8, 8, 3, 3))
    args.update(kw)
    with pytest.raises(err):
        R.make_layer(**args)
