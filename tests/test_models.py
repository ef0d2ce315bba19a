"""Whole-model conversion: every converted tensor against an independent reference and the
library call it stands for, an int8 convolution computed from the blocked buffer, the file
format, the other readers, rules and the CLI."""
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import reorder as ro
from reorder import opencl as rocl
from reorder.__main__ import main

from model_builder import resnet_like
from reorder.testing.reference import offsets_of_all, ref_from_plain, uint_view

CONV = ["stem.weight", "block1.conv1.weight", "block1.conv2.weight", "proj.weight"]
PLAIN = ["stem.bias", "block1.conv1.bias", "proj.bias", "dw.bias", "grouped.bias", "bn.scale",
         "bn.bias", "bn.mean", "bn.var", "fc.bias"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "resnet.onnx"
    return path, resnet_like(path)


def logical(name, a):
    """The oneDNN logical view of an ONNX weight, written out by hand for this model."""
    if name == "dw.weight":
        return a.reshape(30, 1, 1, 3, 3), "abcde"
    if name == "grouped.weight":
        return a.reshape(2, 24, 15, 1, 1), "abcde"
    if name == "fc.weight":
        return a, "ba"                     # Gemm transB=1: stored (N, K), logical (K, N)
    return a, "abcd"[:a.ndim]


def _aligned(loaded):
    for name, (a, _) in loaded.items():
        assert a.ctypes.data % 64 == 0, name


def test_onednn_f32_matches_reference_and_library(model, tmp_path):
    path, arrays = model
    out = tmp_path / "f32.safetensors"
    r = ro.convert(path, out, target="onednn-f32", onednn_lib="none")
    assert r.tensors == len(arrays) and r.bytes_in == sum(a.nbytes for a in arrays.values())
    w = ro.load(out)
    assert w.preset == "onednn-f32"
    _aligned(w)
    expect_tags = {n: "ABcd16b16a" for n in CONV}
    expect_tags.update({"dw.weight": "Abcde16a", "grouped.weight": "aBCde16c16b"})
    for name, src in arrays.items():
        arr, desc = w[name]
        assert not arr.flags.writeable and isinstance(arr.base, np.ndarray) or arr.base is not None
        meta = w.meta(name)
        if name in expect_tags:
            assert meta["tag"] == expect_tags[name], name
            plain, tag = logical(name, src)
            ref = ref_from_plain(plain, tag, meta["tag"])
            assert np.array_equal(uint_view(arr), uint_view(ref)), name
            lib = ro.reorder(plain, tag, meta["tag"])
            assert np.array_equal(uint_view(arr), uint_view(lib)), name
            assert desc.dims == plain.shape if tag != "ba" else True
            assert list(desc.padded_dims) == meta["padded_dims"]
        else:
            assert np.array_equal(arr, src), name
            assert meta["tag"] == "abcd"[:src.ndim]


def test_file_is_standard_safetensors_and_load_maps_without_copies(model, tmp_path):
    from safetensors.numpy import load_file
    path, arrays = model
    out = tmp_path / "f32.safetensors"
    ro.convert(path, out, target="onednn-f32", onednn_lib="none")
    theirs = load_file(str(out))
    ours = ro.load(out)
    for name, (a, _) in ours.items():
        assert np.array_equal(theirs[name], a)
    raw = out.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 64 == 0
    header = json.loads(raw[8:8 + n])
    meta = json.loads(header["__metadata__"]["reorder"])
    assert meta["preset"] == "onednn-f32" and meta["source_file"] == "resnet.onnx"
    for name in arrays:
        assert header[name]["data_offsets"][0] % 64 == 0
        assert set(meta["tensors"][name]) >= {"dims", "tag", "dtype", "padded_dims", "role"}
    # one map of the file: every array is a view of it
    bases = set()
    for a, _ in ours.values():
        b = a
        while isinstance(b.base, np.ndarray):
            b = b.base
        bases.add(id(b))
    assert len(bases) == 1


def quantize_ref(plain, tag, mask_axes, adjust=1.0):
    """Independent per-channel int8 quantization: multiplier 127 / max|w| per masked logical
    dim, q = round half to even of the saturated f32 product."""
    other = tuple(i for i in range(plain.ndim) if i not in mask_axes)
    amax = np.max(np.abs(plain), axis=other, keepdims=True).astype(np.float32)
    mult = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 1).astype(np.float32)
    prod = (np.float32(adjust) * mult * plain.astype(np.float32)).astype(np.float32)
    q = np.rint(np.clip(prod, -128, 127)).astype(np.int8)
    return q, mult


INT8 = {  # name: (expected tag, mask axes over the logical dims)
    "stem.weight": ("ABcd4b16a4b", (0,)),          # IC 3: jit_int8
    "block1.conv1.weight": ("AcdB64a4b", (0,)),     # IC 16, OC 16: brgconv (16o block... below)
    "proj.weight": ("AcdB32a4b", (0,)),             # OC 30: 32o wastes 6%
    "dw.weight": ("Abcde16a", (0,)),
    "grouped.weight": ("aBCde2c8b4c", (0, 1)),      # 24 outputs per group: 8o block
}


def test_onednn_int8_tags_and_values(model, tmp_path):
    path, arrays = model
    out = tmp_path / "int8.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none", isa="avx512_core_vnni")
    w = ro.load(out)
    _aligned(w)
    for name, (_, mask_axes) in INT8.items():
        meta = w.meta(name)
        plain, tag = logical(name, arrays[name])
        q, mult = quantize_ref(plain, tag, mask_axes)
        data = w[name][0]
        assert np.array_equal(data, ref_from_plain(q, tag, meta["tag"])), name
        comp = w[f"{name}.compensation"][0]
        sums = -128 * q.astype(np.int64).sum(axis=tuple(i for i in range(q.ndim)
                                                         if i not in mask_axes))
        padded = np.zeros(meta["padded_dims"][:len(mask_axes)] if mask_axes != (0,) else
                          [meta["padded_dims"][0]], np.int64)
        padded[tuple(slice(0, s) for s in sums.shape)] = sums
        assert np.array_equal(comp, padded.reshape(-1)), name
        assert np.allclose(w[f"{name}.scales"][0], (1 / mult).reshape(-1), rtol=1e-7)
        lib = ro.quantize(plain, tag, meta["tag"], scales=mult.reshape(-1),
                          scale_mask=sum(1 << a for a in mask_axes), compensation="s8s8",
                          comp_mask=sum(1 << a for a in mask_axes))
        assert np.array_equal(data, lib.data) and np.array_equal(comp, lib.compensation)
        buf = w.onednn_buffer(name)
        assert np.array_equal(buf, lib.to_onednn_buffer()), name
    assert w.meta("stem.weight")["tag"] == "ABcd4b16a4b"
    assert w.meta("proj.weight")["tag"] == "AcdB32a4b"
    assert w.meta("fc.weight")["tag"] == "BA16a64b4a"
    assert w["fc.bias"][0].dtype == np.float32


def direct_conv(buf, comp, dims, tag, x_u8, groups, comp_stride):
    """An int8 convolution (stride 1, 'same' padding) that reads the weights from the blocked
    buffer through independent index arithmetic: acc = sum q * u8 + compensation."""
    offs, _ = offsets_of_all(dims, tag)
    offs = offs.reshape(dims)
    flat = np.ascontiguousarray(buf).reshape(-1)
    if groups == 1:
        offs = offs[None]
    G, Og, Ig, K = offs.shape[0], offs.shape[1], offs.shape[2], offs.shape[-1]
    C, H, W = x_u8.shape
    # the u8 stream is the s8 input shifted by 128, its zero padding too
    xp = np.pad(x_u8.astype(np.int64), ((0, 0), (K // 2, K // 2), (K // 2, K // 2)),
                constant_values=128)
    acc = np.zeros((G * Og, H, W), np.int64)
    for g in range(G):
        for o in range(Og):
            for i in range(Ig):
                for kh in range(K):
                    for kw in range(K):
                        q = int(flat[offs[g, o, i, kh, kw]])
                        if q:
                            acc[g * Og + o] += q * xp[g * Ig + i, kh:kh + H, kw:kw + W]
            acc[g * Og + o] += int(comp[g * comp_stride + o])
    return acc


def plain_conv(q, x, groups):
    """The convolution of the plain quantized weights (O, I/G, K, K) with x (C, H, W)."""
    O, Ig, K, _ = q.shape
    C, H, W = x.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (K // 2, K // 2), (K // 2, K // 2)))
    patches = np.stack([xp[:, kh:kh + H, kw:kw + W] for kh in range(K) for kw in range(K)], -1)
    og = O // groups
    out = np.zeros((O, H, W), np.int64)
    for g in range(groups):
        wq = q[g * og:(g + 1) * og].reshape(og, Ig, K * K).astype(np.int64)
        out[g * og:(g + 1) * og] = np.einsum("oik,ihwk->ohw", wq, patches[g * Ig:(g + 1) * Ig])
    return out


@pytest.mark.parametrize("name,groups", [("stem.weight", 1), ("block1.conv1.weight", 1),
                                         ("proj.weight", 1), ("grouped.weight", 2),
                                         ("dw.weight", 30)])
def test_int8_convolution_from_blocked_weights(model, tmp_path, name, groups):
    """s8s8: the convolution reads u8 = s8 + 128; the compensation removes the shift, so the
    result equals the convolution of the plain quantized weights with the s8 input."""
    path, arrays = model
    out = tmp_path / "int8.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none")
    w = ro.load(out)
    meta = w.meta(name)
    plain, tag = logical(name, arrays[name])
    q, _ = quantize_ref(plain, tag, INT8[name][1])
    q_oihw = q.reshape(arrays[name].shape)
    cin = q_oihw.shape[1] * groups
    x_u8 = np.random.default_rng(1).integers(0, 256, (cin, 6, 7)).astype(np.uint8)
    comp_stride = meta["padded_dims"][1] if groups > 1 and meta["dims"][1] > 1 else 1
    got = direct_conv(w[name][0], w[f"{name}.compensation"][0], tuple(meta["dims"]),
                      meta["tag"], x_u8, groups if meta["dims"][1] > 1 or groups == 1 else 1,
                      comp_stride) if groups == 1 or meta["dims"][1] > 1 else \
        direct_conv_dw(w[name][0], w[f"{name}.compensation"][0], tuple(meta["dims"]),
                       meta["tag"], x_u8)
    want = plain_conv(q_oihw, x_u8.astype(np.int64) - 128, groups)
    assert np.array_equal(got, want)
    # without the compensation the result is off by 128 * sum q: it is doing real work
    assert not np.array_equal(got, plain_conv(q_oihw, x_u8.astype(np.int64), groups)) or \
        not q.any()


def direct_conv_dw(buf, comp, dims, tag, x_u8):
    """Depthwise (G, 1, 1, K, K): channel g is convolved with filter g alone."""
    offs, _ = offsets_of_all(dims, tag)
    offs = offs.reshape(dims)
    flat = np.ascontiguousarray(buf).reshape(-1)
    G, K = dims[0], dims[-1]
    C, H, W = x_u8.shape
    xp = np.pad(x_u8.astype(np.int64), ((0, 0), (K // 2, K // 2), (K // 2, K // 2)),
                constant_values=128)
    acc = np.zeros((G, H, W), np.int64)
    for g in range(G):
        for kh in range(K):
            for kw in range(K):
                acc[g] += int(flat[offs[g, 0, 0, kh, kw]]) * xp[g, kh:kh + H, kw:kw + W]
        acc[g] += int(comp[g])
    return acc


def test_int8_without_vnni_halves_and_u8_drops_compensation(model, tmp_path):
    path, arrays = model
    ro.convert(path, tmp_path / "a.safetensors", target="onednn-int8", onednn_lib="none", isa="avx512_core")
    w = ro.load(tmp_path / "a.safetensors")
    assert w.meta("block1.conv1.weight")["tag"] == "ABcd4b16a4b"
    assert w.meta("block1.conv1.weight")["scale_adjust"] == 0.5
    plain, tag = logical("proj.weight", arrays["proj.weight"])
    q, _ = quantize_ref(plain, tag, (0,), adjust=0.5)
    assert np.array_equal(w["proj.weight"][0], ref_from_plain(q, tag, "ABcd4b16a4b"))
    ro.convert(path, tmp_path / "u8.safetensors", target="onednn-int8", onednn_lib="none", activations="u8")
    w = ro.load(tmp_path / "u8.safetensors")
    assert "stem.weight.compensation" not in w and "stem.weight.scales" in w


def _gpu_images(path, out, target, dt, refusal):
    """Convert to a GPU image target: refused, with nothing written, while the grouped conv
    has no image kind (neither MACE nor MNN has grouped convolution on the GPU); done with a
    rule keeping that one plain (goihw). The loaded result."""
    with pytest.raises(ro.ReorderError, match=refusal):
        ro.convert(path, out, target=target, onednn_lib="none", dtype=dt)
    assert not out.exists()
    ro.convert(path, out, target=target, onednn_lib="none", dtype=dt,
               rules=[{"match": "grouped.weight", "dst": "abcde"}])
    return ro.load(out)


def test_mace_images_equal_to_image_array(model, tmp_path):
    path, arrays = model
    for dt, npdt in (("f32", np.float32), ("f16", np.float16)):
        w = _gpu_images(path, tmp_path / f"mace-{dt}.safetensors", "mace-gpu", dt,
                        "grouped.weight.*no image kind for grouped")
        for name in CONV:
            want = rocl.to_image_array(arrays[name], "conv2d_filter").astype(npdt)
            assert np.array_equal(w[name][0], want), name
        dw = rocl.to_image_array(arrays["dw.weight"], "dw_conv2d_filter", layout="bacd")
        assert np.array_equal(w["dw.weight"][0], dw.astype(npdt))
        fc = rocl.to_image_array(arrays["fc.weight"].reshape(20, 48, 1, 1), "weight_width")
        assert np.array_equal(w["fc.weight"][0], fc.astype(npdt))
        assert np.array_equal(w["fc.bias"][0], rocl.to_image_array(arrays["fc.bias"],
                                                                  "argument").astype(npdt))
        assert w.meta("stem.weight")["image_kind"] == "conv2d_filter"
        assert np.array_equal(w["grouped.weight"][0],
                              arrays["grouped.weight"].reshape(2, 24, 15, 1, 1).astype(npdt))


def _cdiv(a, b):
    return -(-a // b)


def mnn_image_ref(kind, t, pad_i):
    """The (height, width, 4) image MNN's OpenCL image backend builds from logical `t`, written
    from MNN's index formulas: CONV2D_FILTER (o, i, h, w) -> pixel (x = i, y = (o/4)·H·W + h·W
    + w), lane o%4, ROUND_UP(I, 4) wide when `pad_i`; DW_CONV2D_FILTER (1, c, h, w) -> (x = h·W
    + w, y = c/4), lane c%4; ARGUMENT (l) -> (x = l/4, y = 0), lane l%4. Every other lane 0."""
    if kind == "argument":
        (n,) = t.shape
        img = np.zeros((1, _cdiv(n, 4), 4), t.dtype)
        for l in range(n):
            img[0, l // 4, l % 4] = t[l]
        return img
    if kind == "dw_conv2d_filter":
        m, c, h, w = t.shape
        assert m == 1
        img = np.zeros((_cdiv(c, 4), h * w, 4), t.dtype)
        for ci, hi, wi in np.ndindex(c, h, w):
            img[ci // 4, hi * w + wi, ci % 4] = t[0, ci, hi, wi]
        return img
    o, i, h, w = t.shape
    img = np.zeros((_cdiv(o, 4) * h * w, _cdiv(i, 4) * 4 if pad_i else i, 4), t.dtype)
    for oi, ii, hi, wi in np.ndindex(o, i, h, w):
        img[(oi // 4) * h * w + hi * w + wi, ii, oi % 4] = t[oi, ii, hi, wi]
    return img


def test_mnn_images_equal_mnns_index_formulas(model, tmp_path):
    path, arrays = model
    for dt, npdt in (("f32", np.float32), ("f16", np.float16)):
        w = _gpu_images(path, tmp_path / f"mnn-{dt}.safetensors", "mnn-gpu", dt,
                        "grouped.weight.*mnn-gpu has no image kind")
        assert w.preset == "mnn-gpu"
        _aligned(w)
        # stem has I = 3: one zero column; proj has O = 30: two zero lanes in its last rows
        for name in CONV:
            want = mnn_image_ref("conv2d_filter", arrays[name], pad_i=True).astype(npdt)
            got = w[name][0]
            assert got.dtype == npdt and np.array_equal(uint_view(got), uint_view(want)), name
            meta = w.meta(name)
            assert meta["image_kind"] == "conv2d_filter" and meta["image_engine"] == "mnn"
            assert meta["image_shape"] == [want.shape[1], want.shape[0]]
            back = rocl.from_image_array(got, "conv2d_filter", arrays[name].shape, engine="mnn")
            assert np.array_equal(back, arrays[name].astype(npdt)), name
        dw = arrays["dw.weight"].reshape(1, 30, 3, 3)
        assert np.array_equal(w["dw.weight"][0], mnn_image_ref("dw_conv2d_filter", dw, False)
                              .astype(npdt))
        # MNN's converter makes Gemm/MatMul with a constant B a 1x1 convolution of (N, K)
        fc = arrays["fc.weight"].reshape(20, 48, 1, 1)                   # transB: stored (N, K)
        assert np.array_equal(w["fc.weight"][0], mnn_image_ref("conv2d_filter", fc, True)
                              .astype(npdt))
        head = arrays["head.weight"].T.reshape(10, 20, 1, 1)             # stored (K, N)
        assert np.array_equal(w["head.weight"][0], mnn_image_ref("conv2d_filter", head, True)
                              .astype(npdt))
        for name in PLAIN:
            if w.meta(name)["role"] == "bias":
                assert np.array_equal(w[name][0], mnn_image_ref("argument", arrays[name], False)
                                      .astype(npdt)), name
        assert np.array_equal(w["grouped.weight"][0],
                              arrays["grouped.weight"].reshape(2, 24, 15, 1, 1).astype(npdt))


def test_mnn_deconvolution_filters(tmp_path):
    """ConvTranspose weights, stored (I, O, H, W): MNN's DeconvExecution swaps them to (O, I, H,
    W) and packs them I wide (no zero columns); depthwise ones are DW_CONV2D_FILTER images."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(5)
    arrays = {"up.weight": rng.standard_normal((7, 5, 3, 2)).astype(np.float32),
              "dwup.weight": rng.standard_normal((6, 1, 2, 3)).astype(np.float32),
              "gup.weight": rng.standard_normal((4, 3, 1, 1)).astype(np.float32)}
    save_file(arrays, str(tmp_path / "d.safetensors"))
    rules = [{"match": "up.weight", "role": "deconv"},
             {"match": "dwup.weight", "role": "deconv", "groups": 6},
             {"match": "gup.weight", "role": "deconv", "groups": 2}]
    with pytest.raises(ro.ReorderError, match="gup.weight.*no image kind for grouped"):
        ro.convert(tmp_path / "d.safetensors", tmp_path / "o.safetensors", target="mnn-gpu",
                   rules=rules)
    rules[2]["dst"] = "abcde"
    ro.convert(tmp_path / "d.safetensors", tmp_path / "o.safetensors", target="mnn-gpu",
               rules=rules)
    w = ro.load(tmp_path / "o.safetensors")
    oihw = arrays["up.weight"].transpose(1, 0, 2, 3)
    assert np.array_equal(w["up.weight"][0], mnn_image_ref("conv2d_filter", oihw, pad_i=False))
    assert w.meta("up.weight")["image_engine"] == "mace"
    dw = arrays["dwup.weight"].reshape(1, 6, 2, 3)
    assert np.array_equal(w["dwup.weight"][0], mnn_image_ref("dw_conv2d_filter", dw, False))


def test_mnn_has_no_3d_images(tmp_path):
    from safetensors.numpy import save_file
    save_file({"c3.weight": np.ones((4, 4, 2, 2, 2), np.float32)}, str(tmp_path / "c.safetensors"))
    with pytest.raises(ro.ReorderError, match="c3.weight.*mnn-gpu packs 2-D convolution"):
        ro.convert(tmp_path / "c.safetensors", tmp_path / "o.safetensors", target="mnn-gpu",
                   rules=[{"match": "*", "role": "conv"}])
    assert not (tmp_path / "o.safetensors").exists()


@pytest.mark.parametrize("target", ["onednn-f32", "onednn-int8", "mace-gpu", "mnn-gpu"])
def test_dirty_reused_buffers_and_short_writes_change_nothing(model, tmp_path, monkeypatch,
                                                              target):
    """Tensors are converted into reused scratch buffers, then written with pwrite: every byte
    of the output must come from the conversion (padding included), never from what a buffer
    held before, and a pwrite that writes only part of the data must be continued."""
    import os
    from reorder.models.buffers import BufferPool
    path, _ = model
    rules = [{"match": "grouped.weight", "dst": "abcde"}]
    clean = tmp_path / "clean.safetensors"
    ro.convert(path, clean, target=target, onednn_lib="none", rules=rules, workers=1)
    take, pwrite = BufferPool.take, os.pwrite

    def dirty_take(self, nbytes):
        held = take(self, nbytes)
        np.frombuffer(held.map, np.uint8)[:] = 0xA5        # NaN-like floats, -91 as s8
        return held

    monkeypatch.setattr(BufferPool, "take", dirty_take)
    monkeypatch.setattr(os, "pwrite", lambda fd, data, pos: pwrite(fd, data[:4099], pos))
    dirty = tmp_path / "dirty.safetensors"
    ro.convert(path, dirty, target=target, onednn_lib="none", rules=rules)
    assert dirty.read_bytes() == clean.read_bytes()


def test_tvm_layout(model, tmp_path):
    path, arrays = model
    out = tmp_path / "tvm.safetensors"
    ro.convert(path, out, target="tvm:OIHW16i16o")
    w = ro.load(out)
    for name in CONV + ["grouped.weight"]:
        want = ref_from_plain(arrays[name], "abcd", "ABcd16b16a")
        assert np.array_equal(w[name][0], want), name
    assert np.array_equal(w["dw.weight"][0], arrays["dw.weight"])


def _save_inputs(arrays, tmp_path):
    from safetensors.numpy import save_file
    np.savez(tmp_path / "stored.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    save_file(arrays, str(tmp_path / "w.safetensors"))
    np.save(tmp_path / "proj.npy", np.asfortranarray(arrays["proj.weight"]))
    rules = tmp_path / "rules.toml"
    rules.write_text('''
[[rule]]
match = "dw.weight"
role = "conv"
groups = 30

[[rule]]
match = "grouped.weight"
role = "conv"
groups = 2

[[rule]]
match = "fc.weight"
role = "fc"
trans = true

[[rule]]
match = "*.weight"
role = "conv"

[[rule]]
match = "proj"
role = "conv"
''')
    return rules


def test_npz_safetensors_npy_with_rules_equal_the_onnx_result(model, tmp_path):
    path, arrays = model
    conv_only = {k: v for k, v in arrays.items() if k != "head.weight"}
    rules = _save_inputs(conv_only, tmp_path)
    ro.convert(path, tmp_path / "onnx.safetensors", target="onednn-f32", onednn_lib="none")
    ref = ro.load(tmp_path / "onnx.safetensors")
    for src in ("stored.npz", "packed.npz", "w.safetensors"):
        out = tmp_path / (src + ".out.safetensors")
        ro.convert(tmp_path / src, out, target="onednn-f32", onednn_lib="none", rules=rules)
        got = ro.load(out)
        for name in conv_only:
            assert np.array_equal(uint_view(got[name][0]), uint_view(ref[name][0])), (src, name)
            assert got.meta(name)["tag"] == ref.meta(name)["tag"]
    ro.convert(tmp_path / "proj.npy", tmp_path / "npy.safetensors", rules=rules)
    assert np.array_equal(ro.load(tmp_path / "npy.safetensors")["proj"][0], ref["proj.weight"][0])


def test_rules_override_the_preset_and_yaml_works(model, tmp_path):
    path, arrays = model
    rules = tmp_path / "r.yaml"
    rules.write_text("rule:\n  - match: proj.weight\n    dst: AcdB64a4b\n"
                     "  - match: stem.weight\n    dst: Acdb16a\n    dtype: f16\n")
    out = tmp_path / "o.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none", rules=rules)
    w = ro.load(out)
    assert w.meta("proj.weight")["tag"] == "AcdB64a4b"          # per-layer override wins
    plain, tag = logical("proj.weight", arrays["proj.weight"])
    q, _ = quantize_ref(plain, tag, (0,))
    assert np.array_equal(w["proj.weight"][0], ref_from_plain(q, tag, "AcdB64a4b"))
    stem = w["stem.weight"][0]
    assert stem.dtype == np.float16
    assert np.array_equal(stem, ref_from_plain(arrays["stem.weight"].astype(np.float16),
                                               "abcd", "Acdb16a"))


def test_cli_one_file_and_many(model, tmp_path, capsys):
    path, arrays = model
    out = tmp_path / "cli.safetensors"
    assert main(["convert", str(path), "-o", str(out), "-t", "onednn-int8", "--onednn-lib", "none", "--isa", "avx2"]) == 0
    text = capsys.readouterr().out
    assert "tensors" in text and "GB/s" in text and "resnet.onnx" in text
    assert ro.load(out).meta("stem.weight")["tag"] == "ABcd2b8a4b"
    assert main(["convert", str(path), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    other = tmp_path / "second.onnx"
    resnet_like(other, seed=3)
    d = tmp_path / "zoo"
    d.mkdir()
    assert main(["convert", str(path), str(other), "--out-dir", str(d), "-q"]) == 0
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in d.iterdir()) == ["resnet.safetensors", "second.safetensors"]


def test_out_dir_is_created_like_mkdir_p(model, tmp_path, capsys):
    path, _ = model
    other = tmp_path / "second.onnx"
    resnet_like(other, seed=3)
    nested = tmp_path / "new" / "nested" / "dir"
    results = ro.convert([path, other], out_dir=nested, target="plain")
    assert [r.dst for r in results] == [str(nested / "resnet.safetensors"),
                                        str(nested / "second.safetensors")]
    assert "stem.weight" in ro.load(nested / "second.safetensors")
    # the command line, in a fresh process
    cli_dir = tmp_path / "cli" / "a" / "b"
    r = subprocess.run([sys.executable, "-m", "reorder", "convert", str(path), "--out-dir",
                        str(cli_dir), "-t", "onednn-f32", "--onednn-lib", "none", "-q"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in cli_dir.iterdir()) == ["resnet.safetensors"]
    # an existing directory is fine; a bad input creates no directory
    assert main(["convert", str(path), "--out-dir", str(cli_dir), "-q", "--force"]) == 0
    missing = tmp_path / "nothing.onnx"
    with pytest.raises(ro.ReorderError, match="nothing.onnx: no such file"):
        ro.convert([missing], out_dir=tmp_path / "never" / "made")
    assert not (tmp_path / "never").exists()


def test_out_dir_that_is_a_file_is_an_error(model, tmp_path, capsys):
    path, _ = model
    f = tmp_path / "taken"
    f.write_bytes(b"not a directory")
    with pytest.raises(ro.ReorderError, match="taken: the output directory is a file"):
        ro.convert([path], out_dir=f)
    with pytest.raises(ro.ReorderError, match=f"cannot create the output directory: {f} is a file"):
        ro.convert([path], out_dir=f / "sub" / "dir")
    assert main(["convert", str(path), "--out-dir", str(f), "-q"]) == 2
    assert "taken: the output directory is a file" in capsys.readouterr().err
    r = subprocess.run([sys.executable, "-m", "reorder", "convert", str(path), "--out-dir",
                        str(f / "sub"), "-q"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and f"{f} is a file" in r.stderr and "Traceback" not in r.stderr
    assert f.read_bytes() == b"not a directory"
