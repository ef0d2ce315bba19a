"""The converter on ONNX graph patterns of real models: weights that reach their op through
constant shape-only ops (GoogLeNet's classifier: Reshape -> Gemm), folded, and ConvTranspose
weights for onednn-int8 (PP-OCR's detection head). Every folded tensor is checked against
np.reshape / np.transpose of the initializer written out here, every int8 deconvolution
weight against a quantization and a transposed convolution computed here in numpy."""
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import reorder as ro  # noqa: E402
from reorder import opencl as rocl  # noqa: E402

from model_builder import deconv_model, folded_ops, shared_initializer  # noqa: E402
from reorder.testing.reference import offsets_of_all, ref_from_plain  # noqa: E402

# name: (the folded array from the initializer, role, Gemm transB)
FOLDED = {
    "cls.w": (lambda a: np.reshape(a, (10, 16)), "fc", True),
    "zm.w": (lambda a: np.reshape(a, (10, 16)), "fc", True),             # shape [0, -1]
    "fl.w": (lambda a: np.reshape(a, (6, 8)), "fc", False),
    "sq.w": (lambda a: np.reshape(a, (8, 4, 3, 3)), "conv", False),
    "usq.w": (lambda a: np.reshape(a, (8, 4, 1, 3)), "conv", False),
    "tr.w": (lambda a: np.transpose(a, (3, 2, 0, 1)), "conv", False),
    "trd.w": (lambda a: np.transpose(a), "fc", True),
    "id.w": (lambda a: a, "conv", False),
    "ch.w": (lambda a: np.transpose(np.reshape(a, (10, 16))), "fc", False),
}
FOLD_OPS = {"cls.w": ["Reshape"], "zm.w": ["Reshape"], "fl.w": ["Flatten"], "sq.w": ["Squeeze"],
            "usq.w": ["Unsqueeze"], "tr.w": ["Transpose"], "trd.w": ["Transpose"],
            "ch.w": ["Reshape", "Transpose"]}


def run_cli(*args):
    r = subprocess.run([sys.executable, "-m", "reorder", "convert", *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    return r


@pytest.fixture(scope="module", params=[11, 17], ids=["opset11", "opset17"])
def folded(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("fold") / f"folded{request.param}.onnx"
    return path, folded_ops(path, opset=request.param)


def expected(arrays, name):
    fn, role, trans = FOLDED[name]
    return fn(arrays[name]), role, trans


def logical_fc(a, trans):
    """A Gemm / MatMul weight as (K, N): transB=1 stores (N, K)."""
    return a.T if trans else a


def quantize_ref(plain, axes, adjust=1.0):
    """Per-channel s8 over the logical dims `axes`: multiplier 127 / max|w|, q = round half to
    even of the saturated f32 product."""
    other = tuple(i for i in range(plain.ndim) if i not in axes)
    amax = np.max(np.abs(plain), axis=other, keepdims=True).astype(np.float32)
    mult = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 1).astype(np.float32)
    prod = (np.float32(adjust) * mult * plain.astype(np.float32)).astype(np.float32)
    return np.rint(np.clip(prod, -128, 127)).astype(np.int8), mult


def padded_comp(q, axes, padded_dims):
    """-128 * sum of q over every dim outside `axes`, zero-padded to the layout's padded dims
    of `axes`, flat."""
    sums = -128 * q.astype(np.int64).sum(axis=tuple(i for i in range(q.ndim) if i not in axes))
    out = np.zeros([padded_dims[a] for a in axes], np.int64)
    out[tuple(slice(0, s) for s in sums.shape)] = sums
    return out.reshape(-1)


def test_plain_writes_every_folded_tensor_under_the_initializers_name(folded, tmp_path):
    path, arrays = folded
    out = tmp_path / "plain.safetensors"
    r = ro.convert(path, out, target="plain")
    w = ro.load(out)
    assert r.tensors == len(arrays) and set(w) == set(arrays)
    for name in FOLDED:
        want, role, trans = expected(arrays, name)
        got = w[name][0]
        assert got.shape == want.shape and np.array_equal(got, want), name
        meta = w.meta(name)
        assert meta["role"] == role, name
        if name in FOLD_OPS:
            assert meta["initializer"] == name
            assert meta["stored_shape"] == list(arrays[name].shape)
            assert [f.split()[0] for f in meta["folded"]] == FOLD_OPS[name], name
            assert len(meta["graph_names"]) == 1 and meta["graph_names"][0] != name
    assert "Gemm 'ch.gemm' input 1 after Reshape 'ch.reshape', Transpose 'ch.transpose'" \
        == w.meta("ch.w")["origin"]
    for name in set(arrays) - set(FOLDED):                   # shapes and axes: as stored
        assert np.array_equal(w[name][0], arrays[name]), name


def test_onednn_f32_folded(folded, tmp_path):
    path, arrays = folded
    out = tmp_path / "f32.safetensors"
    ro.convert(path, out, target="onednn-f32", onednn_lib="none")
    w = ro.load(out)
    for name in FOLDED:
        want, role, _ = expected(arrays, name)
        meta = w.meta(name)
        if role == "conv":
            assert meta["tag"] == "ABcd16b16a", name
            assert np.array_equal(w[name][0], ref_from_plain(want, "abcd", "ABcd16b16a")), name
        else:
            assert meta["role"] == "fc" and np.array_equal(w[name][0], want), name


def test_onednn_int8_folded(folded, tmp_path):
    path, arrays = folded
    out = tmp_path / "int8.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none")
    w = ro.load(out)
    for name in FOLDED:
        want, role, trans = expected(arrays, name)
        meta = w.meta(name)
        if role == "conv":                  # (O, I, H, W), 4 input channels: jit_int8
            plain, tag, axes, dst = want, "abcd", (0,), "ABcd4b16a4b"
        else:                               # (K, N), scales and compensation per N
            plain, tag, axes, dst = logical_fc(want, trans), "ab", (1,), "BA16a64b4a"
        assert meta["tag"] == dst, name
        q, mult = quantize_ref(plain, axes)
        assert np.array_equal(w[name][0], ref_from_plain(q, tag, dst)), name
        assert np.array_equal(w[f"{name}.compensation"][0],
                              padded_comp(q, axes, meta["padded_dims"])), name
        assert np.allclose(w[f"{name}.scales"][0], (1 / mult).reshape(-1), rtol=1e-7), name


@pytest.mark.parametrize("target", ["onednn-int4", "onednn-int4-asym", "onednn-f8", "mace-gpu",
                                    "mnn-gpu", "tvm:OIHW16i16o"])
def test_every_preset_decides_the_folded_roles(folded, tmp_path, target):
    """GoogLeNet's classifier failed for every preset: now each one converts the graph."""
    path, arrays = folded
    out = tmp_path / "o.safetensors"
    ro.convert(path, out, target=target, onednn_lib="none")
    w = ro.load(out)
    for name in FOLDED:
        assert w.meta(name)["role"] == FOLDED[name][1], name
    if target == "mace-gpu":
        for name in FOLDED:
            want, role, trans = expected(arrays, name)
            if role == "conv":
                img = rocl.to_image_array(want, "conv2d_filter")
            else:                            # MACE's weight image of (N, K, 1, 1)
                k, n = logical_fc(want, trans).shape
                img = rocl.to_image_array(logical_fc(want, trans).T.reshape(n, k, 1, 1),
                                          "weight_width")
            assert np.array_equal(w[name][0], img), name
    if target.startswith("tvm:"):
        for name in ("sq.w", "tr.w", "usq.w"):
            want = expected(arrays, name)[0]
            assert np.array_equal(w[name][0], ref_from_plain(want, "abcd", "ABcd16b16a")), name


def test_cli_matches_the_api_on_the_folded_graph(folded, tmp_path):
    path, _ = folded
    for target in ("plain", "onednn-int8"):
        api, cli = tmp_path / f"api-{target}.safetensors", tmp_path / f"cli-{target}.safetensors"
        ro.convert(path, api, target=target)
        r = run_cli(path, "-o", cli, "-t", target, "-q")
        assert r.returncode == 0, r.stderr
        assert cli.read_bytes() == api.read_bytes(), target


def test_one_initializer_feeding_several_fold_chains(tmp_path):
    """One name cannot hold two different tensors: each chain's result is then named by the
    tensor its consumer reads, and the initializer's own name is written only as stored."""
    path = tmp_path / "shared.onnx"
    a = shared_initializer(path)
    out = tmp_path / "o.safetensors"
    ro.convert(path, out, target="plain")
    w = ro.load(out)
    assert set(w) == {"sh.w", "sh.t", "two.a", "two.b", "same.w", "s64", "s46", "s1016"}
    assert np.array_equal(w["sh.w"][0], a["sh.w"])                      # read as stored too
    assert np.array_equal(w["sh.t"][0], np.transpose(a["sh.w"]))
    assert np.array_equal(w["two.a"][0], np.reshape(a["two.w"], (6, 4)))
    assert np.array_equal(w["two.b"][0], np.reshape(a["two.w"], (4, 6)))
    # Reshape [10, 16] and Flatten axis=3 make the same tensor: one output, the initializer's
    assert np.array_equal(w["same.w"][0], np.reshape(a["same.w"], (10, 16)))
    assert w.meta("same.w")["graph_names"] == ["same.r", "same.f"]
    for name in ("sh.t", "two.a", "two.b"):
        meta = w.meta(name)
        assert meta["role"] == "fc" and meta["initializer"] in ("sh.w", "two.w"), name
        assert meta["graph_names"] == [name] and "shared" in meta
    # a rule finds the chains' results by the initializer's name; the graph name wins
    ro.convert(path, out, target="onednn-f32", onednn_lib="none", force=True,
               rules=[{"match": "two.b", "dst": "ab"}, {"match": "two.w", "dst": "ba"}])
    w = ro.load(out)
    assert w.meta("two.a")["tag"] == "ba" and w.meta("two.b")["tag"] == "ab"
    assert np.array_equal(w["two.a"][0], np.reshape(a["two.w"], (6, 4)).T)
    assert np.array_equal(w["two.b"][0], np.reshape(a["two.w"], (4, 6)))


def _graph(path, nodes, inits, inputs, opset=17):
    g = helper.make_graph(nodes, "g",
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def test_reshape_allowzero(tmp_path):
    """allowzero=1: a 0 in the shape is a zero-sized dim, not a copy of the input's."""
    w = np.zeros((0, 4), np.float32)
    path = _graph(tmp_path / "az.onnx",
                  [helper.make_node("Reshape", ["w", "s"], ["r"], name="r", allowzero=1),
                   helper.make_node("MatMul", ["x", "r"], ["y"], name="mm")],
                  {"w": w, "s": np.array([4, 0], np.int64)},
                  [("x", TensorProto.FLOAT, [2, 4])])
    for target in ("plain", "onednn-f32"):
        ro.convert(path, tmp_path / f"{target}.safetensors", target=target, onednn_lib="none")
        got = ro.load(tmp_path / f"{target}.safetensors")
        assert got["w"][0].shape == (4, 0) and got.meta("w")["role"] == "fc"


def test_ops_that_cannot_be_folded(tmp_path):
    """A shape that is not a constant, or that does not fit: the role stays undecided (an
    error saying why, except for plain, which keeps the tensor as stored)."""
    w = np.arange(8 * 4 * 3 * 3, dtype=np.float32).reshape(8, 4, 9)
    cases = {
        "not a constant": ([helper.make_node("Reshape", ["w", "shape_in"], ["wr"], name="r"),
                            helper.make_node("Conv", ["x", "wr"], ["y"], name="c")], {"w": w},
                           [("shape_in", TensorProto.INT64, [4])]),
        "more than one -1": ([helper.make_node("Reshape", ["w", "s"], ["wr"], name="r"),
                              helper.make_node("Conv", ["x", "wr"], ["y"], name="c")],
                             {"w": w, "s": np.array([8, 4, -1, -1], np.int64)}, []),
        "allowzero=1": ([helper.make_node("Reshape", ["w", "s"], ["wr"], name="r", allowzero=1),
                         helper.make_node("Conv", ["x", "wr"], ["y"], name="c")],
                        {"w": w, "s": np.array([0, 4, 3, 3], np.int64)}, []),
        "not 1": ([helper.make_node("Squeeze", ["w", "ax"], ["wr"], name="r"),
                   helper.make_node("Conv", ["x", "wr"], ["y"], name="c")],
                  {"w": w, "ax": np.array([1], np.int64)}, []),
    }
    for why, (nodes, inits, extra) in cases.items():
        path = _graph(tmp_path / "u.onnx", nodes, inits,
                      [("x", TensorProto.FLOAT, [1, 4, 5, 5])] + extra)
        with pytest.raises(ro.ReorderError, match=f"initializer 'w'.*cannot be decided: it "
                                                  f"reaches Conv 'c' input 1 through (Reshape|"
                                                  f"Squeeze) 'r' input 0.*not folded: .*{why}"):
            ro.convert(path, tmp_path / "o.safetensors", target="onednn-f32", onednn_lib="none")
        assert not (tmp_path / "o.safetensors").exists()
        ro.convert(path, tmp_path / "o.safetensors", target="plain", force=True)
        got = ro.load(tmp_path / "o.safetensors")
        assert np.array_equal(got["w"][0], w) and got.meta("w")["role"] == "other", why
        (tmp_path / "o.safetensors").unlink()


def test_plain_keeps_what_no_role_fits(tmp_path):
    """plain never refuses over a role: a tensor whose uses disagree, or whose shape does not
    fit its role, is kept as stored; the other presets still refuse it."""
    m = np.ones((4, 4), np.float32)
    b = np.ones((2, 3), np.float32)
    path = _graph(tmp_path / "d.onnx",
                  [helper.make_node("Conv", ["x", "m"], ["c"], name="c"),
                   helper.make_node("MatMul", ["x", "m"], ["y1"], name="mm"),
                   helper.make_node("Conv", ["x", "k", "b"], ["y"], name="cb")],
                  {"m": m, "b": b, "k": np.ones((3, 4, 1, 1), np.float32)},
                  [("x", TensorProto.FLOAT, [1, 4, 4, 4])])
    with pytest.raises(ro.ReorderError, match="initializer 'm'.*uses disagree"):
        ro.convert(path, tmp_path / "o.safetensors", target="onednn-f32", onednn_lib="none")
    ro.convert(path, tmp_path / "o.safetensors", target="plain")
    got = ro.load(tmp_path / "o.safetensors")
    assert np.array_equal(got["m"][0], m) and np.array_equal(got["b"][0], b)


# ---- ConvTranspose for onednn-int8 -------------------------------------------------------

# (name, C_in, C_out, k, group, stride): ONNX weights [C_in, C_out / group, k, k]
DECONV = [("up", 32, 48, 3, 1, 2),       # IC 32 >= 16: brgconv's layout on VNNI
          ("small", 8, 20, 2, 1, 2),     # IC 8: jit_int8, O and I padded
          ("head", 24, 1, 2, 1, 2),      # PP-OCR's last ConvTranspose: one output channel
          ("g4", 32, 24, 2, 2, 2),       # 16 in, 12 out per group: 4-channel block
          ("g16", 64, 64, 3, 4, 1)]      # 16 in, 16 out per group
INT8_DECONV = {
    "avx512_core_vnni": {"up": "AcdB48a4b", "small": "ABcd4b16a4b", "head": "AcdB16a4b",
                         "g4": "aBCde4b4c", "g16": "aBCde4c16b4c"},
    "avx512_core": {"up": "ABcd4b16a4b", "small": "ABcd4b16a4b", "head": "ABcd4b16a4b",
                    "g4": "aBCde4b4c", "g16": "aBCde4c16b4c"},
    "avx2_vnni": {"up": "AcdB24a4b", "small": "AcdB24a4b", "head": "AcdB24a4b",
                  "g4": "aBCde4b4c", "g16": "aBCde2c8b4c"},
    "avx2": {"up": "ABcd2b8a4b", "small": "ABcd2b8a4b", "head": "ABcd2b8a4b",
             "g4": "aBCde4b4c", "g16": "aBCde2c8b4c"},
}


@pytest.fixture(scope="module")
def deconvs(tmp_path_factory):
    path = tmp_path_factory.mktemp("deconv") / "deconv.onnx"
    return path, deconv_model(path, DECONV)


def deconv_logical(w, group):
    """oneDNN's deconvolution weights from ONNX's [C_in, C_out/G, k, k]: (O, I, k, k), grouped
    (G, O/G, I/G, k, k) -- O is the deconvolution's output."""
    if group == 1:
        return np.transpose(w, (1, 0, 2, 3))
    cin, og, k, _ = w.shape
    return np.transpose(w.reshape(group, cin // group, og, k, k), (0, 2, 1, 3, 4))


def deconv_from_blocked(buf, comp, dims, tag, x_u8, stride, comp_stride):
    """An int8 transposed convolution that reads the weights from the blocked buffer by
    index arithmetic, as oneDNN's s8-source deconvolution runs: a convolution of the flipped
    taps over the input with stride - 1 zeros between pixels and k - 1 around, where every
    pixel, inserted zeros included, is u8 = s8 + 128; acc = sum q * u8 + compensation."""
    offs, _ = offsets_of_all(dims, tag)
    q = np.ascontiguousarray(buf).reshape(-1)[offs].reshape(dims).astype(np.int64)
    q = q[None] if len(dims) == 4 else q
    G, Og, Ig, K = q.shape[0], q.shape[1], q.shape[2], q.shape[-1]
    C, H, W = x_u8.shape
    OH, OW = (H - 1) * stride + K, (W - 1) * stride + K
    xz = np.full((C, OH + K - 1, OW + K - 1), 128, np.int64)
    xz[:, K - 1:K - 1 + (H - 1) * stride + 1:stride,
       K - 1:K - 1 + (W - 1) * stride + 1:stride] = x_u8
    acc = np.zeros((G * Og, OH, OW), np.int64)
    for g in range(G):
        for kh in range(K):
            for kw in range(K):
                acc[g * Og:(g + 1) * Og] += np.einsum(
                    "oi,ihw->ohw", q[g, :, :, kh, kw],
                    xz[g * Ig:(g + 1) * Ig, K - 1 - kh:K - 1 - kh + OH, K - 1 - kw:K - 1 - kw + OW])
        acc[g * Og:(g + 1) * Og] += comp[g * comp_stride:g * comp_stride + Og, None, None]
    return acc


def plain_deconv(q_onnx, x, stride, group):
    """ONNX ConvTranspose (no padding) of weights [C_in, C_out/G, k, k] with x (C_in, H, W):
    y[g, o, ih*s + kh, iw*s + kw] += w[i, o, kh, kw] * x[i, ih, iw]."""
    cin, og, K, _ = q_onnx.shape
    C, H, W = x.shape
    ig = cin // group
    y = np.zeros((group * og, (H - 1) * stride + K, (W - 1) * stride + K), np.int64)
    for g in range(group):
        wg = q_onnx[g * ig:(g + 1) * ig].astype(np.int64)
        for ih in range(H):
            for iw in range(W):
                oh, ow = ih * stride, iw * stride
                y[g * og:(g + 1) * og, oh:oh + K, ow:ow + K] += \
                    np.einsum("iokl,i->okl", wg, x[g * ig:(g + 1) * ig, ih, iw])
    return y


@pytest.mark.parametrize("isa", list(INT8_DECONV))
def test_onednn_int8_conv_transpose(deconvs, tmp_path, isa):
    path, arrays = deconvs
    out = tmp_path / "int8.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none", isa=isa)
    w = ro.load(out)
    adjust = 0.5 if isa in ("avx512_core", "avx2") else 1.0
    rng = np.random.default_rng(2)
    for name, cin, cout, k, group, stride in DECONV:
        wname = f"{name}.weight"
        meta = w.meta(wname)
        tag = INT8_DECONV[isa][name]
        assert meta["role"] == "deconv" and meta["tag"] == tag, (isa, name, meta["tag"])
        plain = deconv_logical(arrays[wname], group)
        assert meta["dims"] == list(plain.shape)
        axes = (0,) if group == 1 else (0, 1)                # per output channel (per group)
        assert meta["mask"] == sum(1 << a for a in axes) and meta["scale_adjust"] == adjust
        q, mult = quantize_ref(plain, axes, adjust)
        data, comp = w[wname][0], w[f"{wname}.compensation"][0]
        assert np.array_equal(data, ref_from_plain(q, "abcde"[:plain.ndim], tag)), (isa, name)
        assert np.array_equal(comp, padded_comp(q, axes, meta["padded_dims"])), (isa, name)
        assert np.allclose(w[f"{wname}.scales"][0], (1 / mult).reshape(-1), rtol=1e-7)
        assert np.array_equal(w[f"{name}.bias"][0], arrays[f"{name}.bias"])
        # the transposed convolution read from the blocked buffer is the one of the plain
        # quantized weights in ONNX's layout with the s8 input
        q_onnx = np.transpose(q, (1, 0, 2, 3)) if group == 1 else \
            np.transpose(q, (0, 2, 1, 3, 4)).reshape(arrays[wname].shape)
        x_u8 = rng.integers(0, 256, (cin, 3, 4)).astype(np.uint8)
        comp_stride = meta["padded_dims"][1] if group > 1 else 0
        got = deconv_from_blocked(data, comp, tuple(meta["dims"]), tag, x_u8, stride,
                                  comp_stride)
        assert np.array_equal(got, plain_deconv(q_onnx, x_u8.astype(np.int64) - 128, stride,
                                                group)), (isa, name)
        assert not np.array_equal(got, plain_deconv(q_onnx, x_u8.astype(np.int64), stride,
                                                        group))


def test_onednn_int8_conv_transpose_u8_and_cli(deconvs, tmp_path):
    path, arrays = deconvs
    out = tmp_path / "u8.safetensors"
    ro.convert(path, out, target="onednn-int8", onednn_lib="none", activations="u8")
    w = ro.load(out)
    assert "up.weight.compensation" not in w and "up.weight.scales" in w
    q, _ = quantize_ref(deconv_logical(arrays["up.weight"], 1), (0,))
    assert np.array_equal(w["up.weight"][0], ref_from_plain(q, "abcd", "AcdB48a4b"))
    cli = tmp_path / "cli.safetensors"
    r = run_cli(path, "-o", cli, "-t", "onednn-int8", "--onednn-lib", "none", "--activations", "u8", "-q")
    assert r.returncode == 0, r.stderr
    assert cli.read_bytes() == out.read_bytes()


def test_onednn_f32_conv_transpose(deconvs, tmp_path):
    path, arrays = deconvs
    out = tmp_path / "f32.safetensors"
    ro.convert(path, out, target="onednn-f32", onednn_lib="none")
    w = ro.load(out)
    for name, _, _, _, group, _ in DECONV:
        plain = deconv_logical(arrays[f"{name}.weight"], group)
        tag = "BAcd16b16a" if group == 1 else "aCBde16c16b"          # (g)IOhw16i16o
        assert w.meta(f"{name}.weight")["tag"] == tag
        assert np.array_equal(w[f"{name}.weight"][0],
                              ref_from_plain(plain, "abcde"[:plain.ndim], tag)), name


def test_int8_depthwise_and_odd_grouped_conv_transpose(tmp_path):
    """oneDNN's int8 deconvolution kernels take depthwise weights with a u8 source only, and
    grouped ones whose channels per group are multiples of 4: anything else is refused,
    naming the tensor, unless a rule gives it a layout."""
    dw = tmp_path / "dw.onnx"
    a = deconv_model(dw, [("dw", 6, 6, 3, 6, 1)])
    with pytest.raises(ro.ReorderError, match="'dw.weight'.*depthwise.*u8 source only"):
        ro.convert(dw, tmp_path / "o.safetensors", target="onednn-int8", onednn_lib="none")
    assert not (tmp_path / "o.safetensors").exists()
    ro.convert(dw, tmp_path / "o.safetensors", target="onednn-int8", onednn_lib="none", activations="u8")
    w = ro.load(tmp_path / "o.safetensors")
    q, _ = quantize_ref(deconv_logical(a["dw.weight"], 6), (0,))
    assert w.meta("dw.weight")["tag"] == "Abcde16a" and "dw.weight.compensation" not in w
    assert np.array_equal(w["dw.weight"][0], ref_from_plain(q, "abcde", "Abcde16a"))
    odd = tmp_path / "odd.onnx"
    deconv_model(odd, [("odd", 10, 12, 1, 2, 1)])                 # 5 in, 6 out per group
    with pytest.raises(ro.ReorderError, match="'odd.weight'.*6 output and 5 input channels"):
        ro.convert(odd, tmp_path / "p.safetensors", target="onednn-int8", onednn_lib="none")
    r = run_cli(odd, "-o", tmp_path / "p.safetensors", "-t", "onednn-int8", "--onednn-lib", "none")
    assert r.returncode != 0 and "odd.weight" in r.stderr and "Traceback" not in r.stderr
    ro.convert(odd, tmp_path / "p.safetensors", target="onednn-int8", onednn_lib="none",
               rules=[{"match": "odd.weight", "dst": "abcde", "quantize": "s8"}])
    assert ro.load(tmp_path / "p.safetensors").meta("odd.weight")["dtype"] == "s8"
