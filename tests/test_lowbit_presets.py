"""The converter's onednn-int4 and onednn-f8 presets: MatMul / Gemm weights as oneDNN's matmul
weight decompression takes them (plain (K, N), s4 packed two a byte or f8_e4m3, f32 scales per
group of K as their own tensor), checked against the independent low-bit reference."""
import json
import struct

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

import reorder as ro
from reorder.models.tasks import lowbit_group

from lowbit_reference import pack_nibbles, place, quantize_ref
from model_builder import resnet_like
from reorder.testing.reference import ref_from_plain


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from onnx import helper, numpy_helper  # noqa: F401  (resnet_like builds the graph)
    path = tmp_path_factory.mktemp("lowbit") / "m.onnx"
    big = (np.random.default_rng(7).standard_normal((256, 40)) * 3).astype(np.float32)
    big[:128, 5] = 0                                   # a group of zeros: scale 1, codes 0
    node = helper.make_node("MatMul", ["fc", "big.weight"], ["big_out"], name="big")
    arrays = resnet_like(path, extra=[(node, {"big.weight": big})])
    return path, arrays


# name: logical (K, N) of the stored array
def _logical(name, a):
    return a.T if name == "fc.weight" else a       # Gemm transB=1 stores (N, K)


def _expect(w, dtype):
    """Scales (absmax / qmax per group of G along K, 1 for a zero group) and the codes, from
    the reference's own rules."""
    K, N = w.shape
    G = 128 if K % 128 == 0 else 64 if K % 64 == 0 else 32 if K % 32 == 0 else K
    qmax = np.float32(7 if dtype == "s4" else 448)
    amax = np.abs(w.reshape(K // G, G, N)).max(axis=1)
    scales = np.where(amax == 0, np.float32(1), amax / qmax).astype(np.float32)
    inv = (np.float32(1) / scales).reshape(-1)
    codes = quantize_ref(w, (K, N), dtype, inv, None, 3, (G, 1))
    return G, scales, codes


@pytest.mark.parametrize("preset,dtype", [("onednn-int4", "s4"), ("onednn-f8", "f8_e4m3")])
def test_lowbit_presets(model, tmp_path, preset, dtype):
    path, arrays = model
    out = tmp_path / "o.safetensors"
    ro.convert(path, out, target=preset)
    w = ro.load(out)
    assert w.preset == preset
    with open(out, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name in ("fc.weight", "head.weight", "big.weight"):
        plain = _logical(name, arrays[name])
        K, N = plain.shape
        G, scales, codes = _expect(plain, dtype)
        assert lowbit_group(K) == G
        meta = w.meta(name)
        assert meta["tag"] == "ab" and meta["dtype"] == dtype and meta["group_size"] == G
        assert meta["dims"] == [K, N] and meta["scales"] == f"{name}.scales"
        data = w[name][0]
        if dtype == "s4":
            assert header[name]["dtype"] == "U8" and data.shape == ((K * N + 1) // 2,)
            assert np.array_equal(data, pack_nibbles(place(codes, (K, N), "ab")))
        else:
            assert header[name]["dtype"] == "F8_E4M3"
            assert data.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and data.shape == (K, N)
            assert np.array_equal(data.view(np.uint8).reshape(-1), codes.astype(np.uint8))
        s = w[f"{name}.scales"][0]
        assert s.dtype == np.float32 and np.array_equal(s, scales), name
        assert w.meta(f"{name}.scales")["group_size"] == G
        # and back with oneDNN's grouped source scales: within half a step of the weights
        back = ro.reorder(data, "ab", "ab", dims=(K, N), src_dtype=dtype if dtype == "s4" else None,
                          dtype="f32", src_scales=s, src_groups=(G, 1))
        step = np.repeat(s, G, axis=0)
        if dtype == "s4":
            assert np.all(np.abs(back - plain) <= step * 0.5 + 1e-6 * np.abs(plain))
        assert G < K or name != "big.weight"
    # convolutions keep the onednn-f32 layouts: decompression is a matmul feature
    conv = w["block1.conv1.weight"][0]
    assert w.meta("block1.conv1.weight")["tag"] == "ABcd16b16a"
    assert np.array_equal(conv, ref_from_plain(arrays["block1.conv1.weight"], "abcd", "ABcd16b16a"))
    assert w["fc.bias"][0].dtype == np.float32


def test_lowbit_group_rule():
    assert [lowbit_group(k) for k in (4096, 192, 96, 48, 20, 1)] == [128, 64, 32, 48, 20, 1]


def test_int4_asymmetric_preset(model, tmp_path):
    """onednn-int4-asym: u4 codes, f32 scales and u4 zero points per group of K, the min/max
    rule of docs/int8.md: lo = min(min, 0), hi = max(max, 0), scale = (hi - lo) / 15,
    zp = clamp(rint(-lo / scale), 0, 15), q = clamp(rint(w * (1/scale) + zp), 0, 15)."""
    path, arrays = model
    out = tmp_path / "a.safetensors"
    ro.convert(path, out, target="onednn-int4-asym")
    w = ro.load(out)
    with open(out, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name in ("fc.weight", "head.weight", "big.weight"):
        plain = _logical(name, arrays[name])
        K, N = plain.shape
        G = lowbit_group(K)
        g = plain.reshape(K // G, G, N)
        lo = np.minimum(g.min(axis=1), 0).astype(np.float32)
        hi = np.maximum(g.max(axis=1), 0).astype(np.float32)
        scales = ((hi - lo) / np.float32(15)).astype(np.float32)
        scales = np.where(scales == 0, np.float32(1), scales).astype(np.float32)
        zp = np.clip(np.rint(np.float32(0) - lo / scales), 0, 15).astype(np.int64)
        inv = (np.float32(1) / scales).reshape(-1)
        codes = quantize_ref(plain, (K, N), "u4", inv, zp.reshape(-1), 3, (G, 1))
        meta = w.meta(name)
        assert meta["dtype"] == "u4" and meta["group_size"] == G
        assert meta["zero_points"] == f"{name}.zero_points"
        data = w[name][0]
        assert header[name]["dtype"] == "U8"
        assert np.array_equal(data, pack_nibbles(place(codes, (K, N), "ab"))), name
        assert np.array_equal(w[f"{name}.scales"][0], scales), name
        z = w[f"{name}.zero_points"][0]
        assert header[f"{name}.zero_points"]["dtype"] == "U8"
        assert np.array_equal(z, pack_nibbles(zp.reshape(-1))), name
        zm = w.meta(f"{name}.zero_points")
        assert zm["dtype"] == "u4" and zm["dims"] == [K // G, N] and zm["group_size"] == G
        # and back as oneDNN's decompression reads it: scale * (q - zp), within half a step
        zvals = ro.reorder(z, "ab", "ab", dims=(K // G, N), src_dtype="u4", packed=False)
        back = ro.reorder(data, "ab", "ab", dims=(K, N), src_dtype="u4", dtype="f32",
                          src_scales=w[f"{name}.scales"][0], src_zero_point=zvals,
                          src_groups=(G, 1))
        step = np.repeat(scales, G, axis=0)
        assert np.all(np.abs(back - plain) <= step * 0.5 + 1e-5 * np.abs(plain) + 1e-6), name
    assert w.meta("block1.conv1.weight")["tag"] == "ABcd16b16a"
