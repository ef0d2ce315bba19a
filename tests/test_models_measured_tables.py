"""The fallback tables of onednn-f32 / onednn-int8 from measurements: the committed sweep parses
and names its oneDNN and ISAs, the tables give back every measured row's own layout, the
nearest-row rule picks what docs/convert.md says, ISAs and sources the data does not cover keep
the hand-written rules, and (with the real oneDNN, limited to avx2) the tables agree with the
query on the held-out networks' layers at least as well as the data file records."""
import json
import math
import os
import re
import subprocess
import sys

import pytest

import reorder as ro
from reorder.models import measured as M
from reorder.models import onednn_runtime as R
from reorder.models.presets import decide, make_target
from reorder.models.roles import Role, view

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = M.measurements()


def stored(row):
    """(ONNX's stored shape, Role) of a row's weight, the way a model file holds it."""
    w, g, kind = tuple(row["weights_dims"]), row["groups"], row["kind"]
    if kind == "ip":
        return w, Role("fc", trans=True)                  # Gemm transB: (N, K)
    if kind == "matmul":
        return w, Role("fc")                              # (K, N)
    if g == 1:
        shape = w if kind == "conv" else (w[1], w[0]) + w[2:]
    elif kind == "conv":                                  # (G, O/G, I/G, k) -> (O, I/G, k)
        shape = (g * w[1], w[2]) + w[3:]
    else:                                                 # deconv: (I, O/G, k)
        shape = (g * w[2], w[1]) + w[3:]
    return shape, Role(kind, groups=g)


def layer(row):
    return R.Layer(row["kind"], tuple(row["src_dims"]), tuple(row["weights_dims"]),
                   tuple(row["dst_dims"]), tuple(row["strides"]), tuple(row["pads"]),
                   tuple(row["dilations"]), row["groups"], row["src_dtype"], row["src_layout"])


def preset(src_dtype):
    return "onednn-int8" if src_dtype in ("s8", "u8") else "onednn-f32"


def over_onednn_dims(tag, kind):
    """A decision's tag over oneDNN's weights dims (the view of an inner product is (K, N))."""
    return tag.translate(str.maketrans("abAB", "baBA")) if kind == "ip" else tag


def test_the_data_names_its_onednn_and_isas():
    d = DATA.data
    assert re.fullmatch(r"3\.\d+\.\d+", DATA.version)
    assert d["onednn"]["packages"] and d["onednn"]["hash"]
    assert DATA.isas and set(DATA.isas) <= {"avx512_core_vnni", "avx512_core", "avx2_vnni",
                                            "avx2"}
    assert DATA.rows and {r.isa for r in DATA.rows} == set(DATA.isas)
    for r in DATA.rows:
        # measured with oneDNN limited to the row's ISA, and it ran that ISA
        assert r.layer["effective_isa"] == r.isa
        assert r.implementation and r.tag
    assert set(d["networks"]).isdisjoint(d["held_out_networks"])
    assert {r.network for r in DATA.rows} == set(d["networks"])
    assert DATA.sources == [("f32", "nhwc"), ("s8", "nhwc"), ("u8", "nhwc")]


def test_every_measured_row_is_answered_with_its_own_layout():
    for r in DATA.rows:
        shape, role = stored(r.layer)
        v = view("w", shape, role, "test")
        target = make_target(preset(r.src_dtype), isa=r.isa,
                             activations=r.src_dtype)
        d = decide(target, role, v, layer(r.layer))
        assert over_onednn_dims(d.tag, r.sig.kind) == r.tag, (r.network, r.layer)
        assert d.why.startswith(f"measured table (oneDNN {DATA.version}, {r.isa})")
        if d.action == "quantize":
            assert (d.compensation, d.scale_adjust) == (r.compensation, r.scale_adjust)
            assert d.mask == (2 if role.kind == "fc" else
                              1 if role.groups == 1 or v.depthwise else 3)
        else:
            assert d.action == "reorder" and d.dtype == "f32"


def _rows(*specs):
    """A Measurements of conv rows (weights dims, strides, src dims, tag)."""
    rows = [{"isa": "avx2", "network": "n", "kind": "conv", "src_dims": list(src),
             "weights_dims": list(w), "dst_dims": [], "strides": list(st), "pads": [],
             "dilations": [], "groups": 1, "src_dtype": "f32", "src_layout": "nhwc",
             "tag": tag, "implementation": "x", "compensation": [], "scale_adjust": 1.0}
            for w, st, src, tag in specs]
    return M.Measurements({"onednn": {"version": "3.2.0"}, "isas": ["avx2"], "rows": rows})


def test_the_nearest_row_rule():
    m = _rows(((64, 64, 1, 1), (1, 1), (1, 64, 56, 56), "one"),
              ((64, 64, 3, 3), (1, 1), (1, 64, 56, 56), "three"),
              ((64, 64, 3, 3), (2, 2), (1, 64, 56, 56), "three_s2"),
              ((48, 64, 3, 3), (1, 1), (1, 64, 56, 56), "three_48"),
              ((128, 64, 3, 3), (1, 1), (1, 64, 7, 7), "three_small"))

    def pick(w, st=(1, 1), src=None, kind="conv", dtype="f32", isa="avx2"):
        sig = M.signature(kind, w, 1, st, src or (1, w[1], 56, 56))
        r = m.nearest(isa, dtype, "nhwc", sig)
        return r and r.tag

    # a 1x1 kernel is answered by the 1x1 row however far its channels are
    assert pick((512, 16, 1, 1)) == "one"
    assert pick((64, 64, 5, 5)) == "three"             # volume 25 vs 9: log2 ratio, no other
    assert pick((64, 64, 3, 3), (2, 2)) == "three_s2"  # the stride counts one
    # 24 divides 48 and 72, not 64: the blocks that divide OC outweigh log2(72/64)
    assert pick((72, 64, 3, 3)) == "three_48"
    # the source's spatial size: 8x8 is nearer 7x7 than 56x56, whatever the 128 channels
    assert pick((128, 64, 3, 3), src=(1, 64, 8, 8)) == "three_small"
    # another kind, source type or ISA: no row, the hand-written rules answer
    assert pick((64, 64, 3, 3), kind="deconv") is None
    assert pick((64, 64, 3, 3), dtype="s8") is None
    assert pick((64, 64, 3, 3), isa="avx512_core") is None
    # hand-computed distance of the rule in docs/convert.md
    a = M.signature("conv", (96, 24, 3, 3), 1, (2, 2), (1, 24, 28, 28))
    b = M.signature("conv", (64, 64, 1, 1), 1, (1, 1), (1, 64, 56, 56))
    # 24 divides 96, not 64 (8, 16, 32 divide both); 24 has 8, 64 16 for largest power of two
    want = (math.log2(96 / 64) + math.log2(64 / 24) + math.log2(9) + 1 + 0.5 + 1
            + 0.5 * math.log2(56 * 56 / (28 * 28)))
    assert M.distance(a, b) == pytest.approx(want)


def test_uncovered_isas_and_sources_keep_the_rules():
    v = view("w", (64, 64, 3, 3), Role("conv"), "test")
    rules = decide(make_target("onednn-f32", isa="avx512_core"), Role("conv"), v)
    assert rules.tag == "ABcd16b16a" and not rules.why.startswith("measured")
    assert decide(make_target("onednn-f32", isa="avx2"), Role("conv"), v, tables=False) == \
        decide(make_target("onednn-f32", isa="avx2", src_layout="nchw"), Role("conv"), v)
    measured = decide(make_target("onednn-f32", isa="avx2"), Role("conv"), v)
    assert measured.why.startswith("measured table")
    # without a graph the fully connected role's transB says inner product or matmul
    fc = view("w", (1000, 512), Role("fc", trans=True), "test")
    d = decide(make_target("onednn-int8", isa="avx2"), Role("fc", trans=True), fc)
    assert "ip weights" in d.why and d.mask == 2


def test_bad_data_names_the_missing_part():
    with pytest.raises(ValueError, match="missing 'isas'"):
        M.Measurements({"onednn": {"version": "3.2.0"}, "rows": []}, "bad.json")
    with pytest.raises(ValueError, match="bad.json: row 0"):
        M.Measurements({"onednn": {"version": "3.2.0"}, "isas": ["avx2"],
                        "rows": [{"kind": "conv"}]}, "bad.json")


def test_fallback_warning_says_what_the_tables_are(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_models_onednn_query import LAYERS, build
    path = tmp_path / "net.onnx"
    build(path)
    monkeypatch.setattr(R, "find_library", lambda path=None: None)
    with pytest.warns(UserWarning, match=r"tables for avx2 are oneDNN 3\.\d+\.\d+'s answers"):
        ro.convert(path, tmp_path / "m.safetensors", target="onednn-int8", isa="avx2",
                   activations="u8")
    w = ro.load(tmp_path / "m.safetensors")
    for name, *_ in LAYERS:
        meta = w.meta(f"{name}.weight")
        assert meta["onednn"]["decision"] == "table"
        assert meta["why"].startswith("measured table")
    with pytest.warns(UserWarning, match="tables for avx512_core_vnni with a s8 nhwc source "
                                         "are the hand-written rules"):
        ro.convert(path, tmp_path / "r.safetensors", target="onednn-int8")
    assert not ro.load(tmp_path / "r.safetensors").meta("c2.weight")["why"].startswith(
        "measured")


LIB = R.library()


@pytest.mark.skipif(LIB is None, reason="oneDNN not installed (pip install onednn-cpu-gomp)")
def test_held_out_agreement_at_avx2_is_what_the_data_records():
    if not R.isa_at_most("avx2", LIB.isa_value):
        pytest.skip(f"this machine runs {LIB.isa}, below avx2")
    if "avx2" not in DATA.isas:
        pytest.skip("the data has no avx2 rows")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "onednn_sweep.py"),
                        "--evaluate", "--isa", "avx2"], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["agreement"]["avx2"]
    recorded = DATA.data["held_out_agreement"]["avx2"]
    assert set(got) == set(recorded) == {"onednn-f32 f32", "onednn-int8 s8", "onednn-int8 u8"}
    for source, rec in recorded.items():
        g = got[source]
        # another oneDNN 3.x may answer a few layers differently; 3 % of the layers is the margin
        margin = math.ceil(0.03 * rec["layers"])
        assert g["layers"] >= rec["layers"] - margin, source
        assert g["measured"] / g["layers"] >= (rec["measured"] - margin) / rec["layers"], \
            (source, g, rec)
        assert g["measured"] > g["rules"], source
