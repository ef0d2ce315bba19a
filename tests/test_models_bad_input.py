"""Bad input to the converter: clear errors naming the bad part, no output left behind, and
the input files never touched."""
import errno
import hashlib
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

import reorder as ro  # noqa: E402

from model_builder import resnet_like  # noqa: E402


def fingerprint(path):
    st = os.stat(path)
    return hashlib.sha256(open(path, "rb").read()).hexdigest(), st.st_mtime_ns, st.st_size


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.onnx"
    resnet_like(path)
    return path


def _no_leftovers(d):
    return [p.name for p in d.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("cut", [0, 5, 100, -1000, -3])
def test_truncated_onnx(model, tmp_path, cut):
    data = model.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(data[:cut] if cut else b"")
    before = fingerprint(bad)
    with pytest.raises(ro.ReorderError, match="bad.onnx.*(truncated|corrupt|empty|not an ONNX)"):
        ro.convert(bad, tmp_path / "o.safetensors")
    assert fingerprint(bad) == before and not (tmp_path / "o.safetensors").exists()
    assert _no_leftovers(tmp_path)


def test_garbage_onnx(tmp_path):
    bad = tmp_path / "g.onnx"
    bad.write_bytes(b"\xff" * 64)
    with pytest.raises(ro.ReorderError, match="g.onnx"):
        ro.convert(bad, tmp_path / "o.safetensors")


def test_corrupt_and_truncated_safetensors(tmp_path):
    from safetensors.numpy import save_file
    good = tmp_path / "w.safetensors"
    save_file({"a": np.ones((4, 4), np.float32)}, str(good))
    data = good.read_bytes()
    cases = {"short": data[:4], "header": data[:8] + b"{not json" + data[17:],
             "cut": data[:-8], "len": (10 ** 9).to_bytes(8, "little") + data[8:]}
    for name, raw in cases.items():
        p = tmp_path / f"{name}.safetensors"
        p.write_bytes(raw)
        with pytest.raises(ro.ReorderError, match=f"{name}.safetensors"):
            ro.convert(p, tmp_path / f"{name}.out.safetensors")
        assert not (tmp_path / f"{name}.out.safetensors").exists()


def test_truncated_npy_and_npz(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((8, 8), np.float32))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:-10])
    with pytest.raises(ro.ReorderError, match="t.npy: truncated"):
        ro.convert(tmp_path / "t.npy", tmp_path / "o.safetensors")
    np.savez(tmp_path / "z.npz", a=np.ones((8, 8), np.float32))
    raw = (tmp_path / "z.npz").read_bytes()
    (tmp_path / "tz.npz").write_bytes(raw[:len(raw) // 2])
    with pytest.raises(ro.ReorderError, match="tz.npz"):
        ro.convert(tmp_path / "tz.npz", tmp_path / "o.safetensors")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ro.ReorderError, match="Python objects"):
        ro.convert(tmp_path / "obj.npy", tmp_path / "o.safetensors")


def _graph(tmp_path, nodes, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 4, 5, 5])],
                          [helper.make_tensor_value_info("y", 1, None)],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(g), str(path))
    return path


def test_undecidable_roles(tmp_path):
    w = np.ones((8, 4, 3, 3), np.float32)
    # the weight reaches Conv through a Reshape whose shape is computed at run time: its
    # layout at the Conv is not known (a constant shape would be folded)
    path = _graph(tmp_path, [helper.make_node("Shape", ["x"], ["s"]),
                             helper.make_node("Reshape", ["w", "s"], ["wt"], name="r"),
                             helper.make_node("Conv", ["x", "wt"], ["y"], name="c")], {"w": w})
    with pytest.raises(ro.ReorderError, match="role of initializer 'w'.*cannot be decided.*Conv "
                                              "'c'.*Reshape 'r'.*not folded: its input 's' is "
                                              "not a constant"):
        ro.convert(path, tmp_path / "o.safetensors")
    # a rule decides it
    ro.convert(path, tmp_path / "o.safetensors", rules=[{"match": "w", "role": "conv"}])
    # used as Conv weights and as a MatMul operand: the uses disagree
    m = np.ones((4, 4), np.float32)
    path = _graph(tmp_path, [helper.make_node("Conv", ["x", "w"], ["c"], name="c"),
                             helper.make_node("MatMul", ["c", "m"], ["y1"], name="mm"),
                             helper.make_node("Gemm", ["m", "m"], ["y"], name="gm")],
                  {"w": w, "m": m})
    with pytest.raises(ro.ReorderError, match="initializer 'm'.*uses disagree"):
        ro.convert(path, tmp_path / "o2.safetensors")


def test_shape_not_fitting(tmp_path):
    np.savez(tmp_path / "w.npz", w=np.ones((8, 4), np.float32), g=np.ones((9, 2, 3, 3), np.float32))
    with pytest.raises(ro.ReorderError, match="'w' of shape \\[8, 4\\].*expected 3 to 5 dims"):
        ro.convert(tmp_path / "w.npz", tmp_path / "o.safetensors",
                   rules=[{"match": "w", "role": "conv"}])
    with pytest.raises(ro.ReorderError, match="'w' of shape \\[8, 4\\] does not fit src = 'oihw'"):
        ro.convert(tmp_path / "w.npz", tmp_path / "o.safetensors",
                   rules=[{"match": "w", "src": "oihw"}])
    with pytest.raises(ro.ReorderError, match="group 2 does not divide its first dim 9"):
        ro.convert(tmp_path / "w.npz", tmp_path / "o.safetensors",
                   rules=[{"match": "g", "role": "conv", "groups": 2}])
    with pytest.raises(ro.ReorderError, match="unknown key 'dts'"):
        ro.convert(tmp_path / "w.npz", tmp_path / "o.safetensors", rules=[{"match": "w", "dts": "x"}])
    (tmp_path / "r.toml").write_text("[[rule]]\nmatch = 3\n")
    with pytest.raises(ro.ReorderError, match="r.toml: rule 1: match = 3 has the wrong type"):
        ro.convert(tmp_path / "w.npz", tmp_path / "o.safetensors", rules=tmp_path / "r.toml")
    assert not (tmp_path / "o.safetensors").exists() and _no_leftovers(tmp_path)


def test_existing_output_is_refused_without_force(model, tmp_path):
    out = tmp_path / "o.safetensors"
    out.write_bytes(b"keep me")
    with pytest.raises(ro.ReorderError, match="exists; refusing"):
        ro.convert(model, out)
    assert out.read_bytes() == b"keep me"
    ro.convert(model, out, force=True)
    assert "stem.weight" in ro.load(out)
    with pytest.raises(ro.ReorderError, match="overwrite its input"):
        ro.convert(model, model, force=True)


def test_full_disk_when_reserving(model, tmp_path, monkeypatch):
    before = fingerprint(model)

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", full)
    out = tmp_path / "o.safetensors"
    with pytest.raises(ro.ReorderError, match="no space left on the device"):
        ro.convert(model, out)
    assert not out.exists() and _no_leftovers(tmp_path)
    assert fingerprint(model) == before


def test_full_disk_while_writing(model, tmp_path, monkeypatch):
    """A failure after some tensors were written (the third write finds the disk full)."""
    calls = {"n": 0}
    real = os.pwrite

    def failing(fd, data, pos):
        calls["n"] += 1
        if calls["n"] == 4:                   # the header, two tensors, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, pos)
    monkeypatch.setattr(os, "pwrite", failing)
    out = tmp_path / "o.safetensors"
    with pytest.raises(ro.ReorderError, match="no space left on the device while writing"):
        ro.convert(model, out, workers=1)
    assert not out.exists() and _no_leftovers(tmp_path)


def test_bad_target_isa_and_missing_extra(model, tmp_path, monkeypatch):
    with pytest.raises(ro.ReorderError, match="unknown target 'onednn-f4'"):
        ro.convert(model, tmp_path / "o.safetensors", target="onednn-f4")
    with pytest.raises(ro.ReorderError, match="unknown ISA 'avx9'"):
        ro.convert(model, tmp_path / "o.safetensors", target="onednn-int8", isa="avx9")
    with pytest.raises(ro.ReorderError, match="tvm:OIHW16q"):
        ro.convert(model, tmp_path / "o.safetensors", target="tvm:OIHW16q")
    (tmp_path / "x.pt").write_bytes(b"torch")
    with pytest.raises(ro.ReorderError, match="unknown input format '.pt'"):
        ro.convert(tmp_path / "x.pt", tmp_path / "o.safetensors")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'reorder\[onnx\]'"):
        ro.convert(model, tmp_path / "o.safetensors")
