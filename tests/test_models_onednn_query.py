"""The converter asks the real oneDNN for each layer's weights layout and writes exactly that:
every converted weight is in the queried layout, and a oneDNN primitive run on the converted
bytes gives outputs bit for bit identical to the same primitive fed by oneDNN's own reorder of
the plain weights (f32; int8 with u8 and s8 sources, scales and compensation). Nothing assumes
an ISA: the expectations are the library's answers on the machine running the test."""
import ctypes.util
import subprocess
import sys

import numpy as np
import pytest

import reorder as ro
from reorder.models import onednn_runtime as R

from onednn_consume import onednn_reordered, random_src, run

LIB = R.library()
pytestmark = pytest.mark.skipif(LIB is None, reason="oneDNN not installed (pip install "
                                                    "onednn-cpu-gomp, the test extra)")

# name, op, in channels, out channels, kernel, stride, group, input spatial size
LAYERS = [("stem", "Conv", 3, 16, 7, 2, 1, 32),           # 7x7 stem on 3 channels
          ("c1", "Conv", 16, 24, 1, 1, 1, 16),            # 1x1
          ("c2", "Conv", 24, 24, 3, 1, 1, 16),            # 3x3
          ("c3", "Conv", 24, 32, 3, 2, 1, 16),            # stride 2
          ("dw", "Conv", 32, 32, 3, 1, 32, 8),            # depthwise
          ("g8", "Conv", 32, 32, 3, 1, 4, 8),             # 8 channels a group
          ("c4", "Conv", 32, 104, 1, 1, 1, 8),
          ("g13", "Conv", 104, 104, 3, 1, 8, 8),          # 13 channels a group
          ("c5", "Conv", 104, 64, 1, 1, 1, 8),
          ("up", "ConvTranspose", 64, 16, 4, 2, 1, 8),    # deconvolution 8 -> 16
          ("c6", "Conv", 16, 48, 3, 1, 1, 16)]
CLASSES = 10


def build(path, seed=0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, arrays, x = [], [], {}, "x"
    for name, op, ci, co, k, s, g, _ in LAYERS:
        shape = (co, ci // g, k, k) if op == "Conv" else (ci, co // g, k, k)
        a = rng.standard_normal(shape).astype(np.float32)
        arrays[f"{name}.weight"] = a
        inits.append(numpy_helper.from_array(a, f"{name}.weight"))
        pad = 1 if op == "ConvTranspose" else k // 2
        nodes.append(helper.make_node(op, [x, f"{name}.weight"], [name], name=name, group=g,
                                      strides=[s, s], pads=[pad] * 4, kernel_shape=[k, k]))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        x = f"{name}_r"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pool"]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"]))
    fc = rng.standard_normal((CLASSES, 48)).astype(np.float32)
    arrays["fc.weight"] = fc
    inits.append(numpy_helper.from_array(fc, "fc.weight"))
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight"], ["out"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes, "query_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                            ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", CLASSES])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return arrays


def layer_of(name, src_dtype):
    """The layer, described by the test itself (not through the converter's shape inference)."""
    if name == "fc.weight":
        return R.make_layer("ip", (1, 48), (CLASSES, 48), src_dtype=src_dtype)
    n, op, ci, co, k, s, g, hw = next(l for l in LAYERS if l[0] == name.split(".")[0])
    if op == "Conv":
        return R.make_layer("conv", (1, ci, hw, hw), (co, ci // g, k, k), strides=s,
                            pads=[k // 2] * 4, groups=g, src_dtype=src_dtype)
    return R.make_layer("deconv", (1, ci, hw, hw), (ci, co // g, k, k), strides=s,
                        pads=[1] * 4, groups=g, src_dtype=src_dtype)


def logical(name, a, layer):
    """The initializer in oneDNN's logical weights dims, row-major."""
    if layer.kind == "conv":
        return a.reshape(layer.weights_dims)
    if layer.kind == "deconv":                    # (I, O, k, k) -> (O, I, k, k)
        return np.ascontiguousarray(a.transpose(1, 0, 2, 3))
    return a                                      # Gemm transB=1: (N, K) = (O, I)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("query") / "net.onnx"
    return path, build(path)


def _bytes_of(arr):
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def test_f32_every_weight_in_the_queried_layout_and_bit_identical(model, tmp_path):
    path, arrays = model
    out = tmp_path / "f32.safetensors"
    r = ro.convert(path, out, target="onednn-f32")
    w = ro.load(out)
    rng = np.random.default_rng(5)
    assert len(r.layers) == len(arrays) == len(LAYERS) + 1
    for name, a in arrays.items():
        layer = layer_of(name, "f32")
        want = LIB.query(layer)
        meta = w.meta(name)
        tag = want.tag if layer.kind != "ip" else want.tag.translate(str.maketrans("abAB", "baBA"))
        assert meta["tag"] == tag, name
        od = meta["onednn"]
        assert od["decision"] == "query" and od["implementation"] == want.implementation
        assert od["size"] == want.size and od["version"] == LIB.version_str
        ours = np.zeros(want.size, np.uint8)
        b = _bytes_of(w[name][0])
        assert b.size == want.data_size
        ours[:b.size] = b
        plain = logical(name, a, layer)
        theirs = onednn_reordered(LIB, layer, plain)
        assert ours.tobytes() == theirs.tobytes(), name
        src = random_src(layer, rng)
        x, y = run(LIB, layer, ours, src), run(LIB, layer, theirs, src)
        assert not np.isnan(x).any() and x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize("act", ["u8", "s8"])
def test_int8_weights_scales_and_compensation_bit_identical(model, tmp_path, act):
    path, arrays = model
    out = tmp_path / f"int8-{act}.safetensors"
    ro.convert(path, out, target="onednn-int8", activations=act)
    w = ro.load(out)
    rng = np.random.default_rng(6)
    for name, a in arrays.items():
        layer = layer_of(name, act)
        want = LIB.query(layer)
        meta = w.meta(name)
        tag = want.tag if layer.kind != "ip" else want.tag.translate(str.maketrans("abAB", "baBA"))
        assert meta["tag"] == tag and meta["onednn"]["decision"] == "query", name
        assert meta["scale_adjust"] == want.scale_adjust
        assert meta["compensation"] == ("+".join(want.compensation) or "none")
        buf = np.ascontiguousarray(w.onednn_buffer(name))
        assert buf.size == want.size, name             # dnnl_memory_desc_get_size exactly
        plain = logical(name, a, layer)
        # the converter's multipliers: 127 / absmax per output channel (per group)
        axes = tuple(range(1, plain.ndim)) if layer.groups == 1 or layer.kind == "ip" else \
            tuple(range(2, plain.ndim))
        mult = (np.float32(127.0) / np.abs(plain).max(axis=axes)).astype(np.float32).reshape(-1)
        theirs = onednn_reordered(LIB, layer, plain, mult)
        n = want.data_size + (-want.data_size % 4) + 4 * len(want.compensation) * \
            (want.size > want.data_size) * int(np.prod(
                [want.padded_dims[d] for d in range(len(want.dims)) if want.comp_mask >> d & 1]))
        assert buf[:n].tobytes() == theirs[:n].tobytes(), name
        scales = np.ascontiguousarray(w[f"{name}.scales"][0], np.float32).reshape(-1)
        src = random_src(layer, rng)
        x = run(LIB, layer, buf.copy(), src, 0.05, scales)
        y = run(LIB, layer, theirs, src, 0.05, scales)
        assert not np.isnan(x).any() and x.tobytes() == y.tobytes(), name


def test_explain_and_cli_flags(model, tmp_path):
    path, _ = model
    out = tmp_path / "cli.safetensors"
    r = subprocess.run([sys.executable, "-m", "reorder", "convert", str(path), "-o", str(out),
                        "-t", "onednn-int8", "--activations", "u8", "--src-layout", "nhwc",
                        "--input-shape", "x=1x3x32x32", "--explain", "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if "(query)" in l]
    assert len(lines) == len(LAYERS) + 1
    assert any("stem.weight: conv src [1, 3, 32, 32] u8 nhwc" in l for l in lines)
    meta = ro.load(out).metadata
    assert meta["onednn_version"] == LIB.version_str and meta["isa"] == LIB.isa


def test_no_library_falls_back_with_one_warning(model, tmp_path, monkeypatch):
    path, _ = model
    # an environment without oneDNN cannot be produced with the wheel installed: hide it
    monkeypatch.setattr(R, "find_library", lambda path=None: None)
    with pytest.warns(UserWarning, match="no oneDNN library found.*Conv 'stem'.*Gemm 'fc'") as rec:
        ro.convert(path, tmp_path / "t.safetensors", target="onednn-f32")
    assert len([x for x in rec if "tables" in str(x.message)]) == 1
    w = ro.load(tmp_path / "t.safetensors")
    assert w.meta("c2.weight")["onednn"]["decision"] == "table"
    assert w.meta("c2.weight")["tag"] == "ABcd16b16a"


def test_higher_isa_falls_back_to_the_tables(model, tmp_path):
    path, _ = model
    if R.isa_at_most("avx512_core_vnni", LIB.isa_value):
        pytest.skip("this machine runs avx512_core_vnni: oneDNN can be limited to it")
    with pytest.warns(UserWarning, match="can only be limited"):
        ro.convert(path, tmp_path / "t.safetensors", target="onednn-int8",
                   isa="avx512_core_vnni")
    assert ro.load(tmp_path / "t.safetensors").meta("c2.weight")["onednn"]["decision"] == "table"


def test_lower_isa_asks_a_child(model, tmp_path):
    path, _ = model
    ro.convert(path, tmp_path / "t.safetensors", target="onednn-int8", isa="avx2")
    m = ro.load(tmp_path / "t.safetensors").meta("c2.weight")["onednn"]
    assert m["decision"] == "query" and m["isa"] == "avx2"


def test_bad_input_names_the_remedy(model, tmp_path):
    path, _ = model
    with pytest.raises(ro.ReorderError, match="names y, which the model has no input of; its "
                                              "inputs: x"):
        ro.convert(path, tmp_path / "o.safetensors", input_shapes=["y=1x3x32x32"])
    with pytest.raises(ro.ReorderError, match="expected NAME=DIMS"):
        ro.convert(path, tmp_path / "o.safetensors", input_shapes=["1x3x32x32"])
    with pytest.raises(ro.ReorderError, match="is not oneDNN"):
        ro.convert(path, tmp_path / "o.safetensors", onednn_lib=ctypes.util.find_library("m"))
    with pytest.raises(ro.ReorderError, match="4 dims given, the input has 4|model fixes 3"):
        ro.convert(path, tmp_path / "o.safetensors", input_shapes=["x=1x4x32x32"])
    assert not (tmp_path / "o.safetensors").exists()


def test_dynamic_spatial_dims_need_an_input_shape(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.ones((8, 3, 3, 3), np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c", pads=[1] * 4)],
                          "d", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                              ["n", 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w")])
    path = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(ro.ReorderError, match="dynamic dim 2.*--input-shape x="):
        ro.convert(path, tmp_path / "o.safetensors")
    ro.convert(path, tmp_path / "o.safetensors", input_shapes={"x": (1, 3, 20, 20)})
    m = ro.load(tmp_path / "o.safetensors").meta("w")["onednn"]
    assert m["layer"].startswith("conv src [1, 3, 20, 20]")
    # without asking oneDNN the tables need no shapes
    ro.convert(path, tmp_path / "p.safetensors", onednn_lib="none")
