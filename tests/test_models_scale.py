"""The converter at scale: bounded memory measured in a fresh process, and many files spread
over a real Dask LocalCluster (two worker processes on the loopback interface)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import reorder as ro

pytestmark = pytest.mark.slow        # model-scale conversions in child processes

_RSS = r"""
import json, resource, sys
import reorder

def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

base = rss("VmRSS:")
r = reorder.convert(sys.argv[1], sys.argv[2], target=sys.argv[3], progress=False)
print(json.dumps({"base": base, "peak": rss("VmHWM:"), "largest": r.largest,
                  "budget": r.peak_budget, "bytes_in": r.bytes_in}))
"""


@pytest.mark.parametrize("target", ["onednn-f32", "onednn-int8"])
def test_peak_memory_is_bounded_by_the_largest_tensor(tmp_path, target):
    """A 96 MB checkpoint of a 24 MB tensor and many smaller ones: the conversion's peak
    resident memory stays within 2 x the largest tensor + 24 MiB, far below the file size."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    tensors = {"big.weight": rng.standard_normal((256, 256, 3, 32), np.float32)}   # 24 MiB
    for i in range(18):
        tensors[f"layer{i}.weight"] = rng.standard_normal((128, 128, 3, 27), np.float32)
    src = tmp_path / "m.safetensors"
    save_file(tensors, str(src))
    del tensors
    r = subprocess.run([sys.executable, "-c", _RSS, str(src), str(tmp_path / "o.safetensors"),
                        target], capture_output=True, text=True, timeout=300,
                       env={"REORDER_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    grown = m["peak"] - m["base"]
    print(f"\n{target}: input {m['bytes_in'] / 2**20:.0f} MiB, largest tensor "
          f"{m['largest'] / 2**20:.0f} MiB, peak RSS growth {grown / 2**20:.1f} MiB")
    assert grown <= 2 * m["largest"] + (24 << 20)
    assert grown < m["bytes_in"] / 2


def test_many_files_over_a_dask_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("onnx")
    from model_builder import resnet_like
    srcs = []
    for i in range(3):
        srcs.append(tmp_path / f"m{i}.onnx")
        resnet_like(srcs[-1], seed=i)
    local, remote = tmp_path / "local", tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    ro.convert(srcs, out_dir=local, target="onednn-int8")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        results = ro.convert(srcs, out_dir=remote, target="onednn-int8", client=client)
        assert [r.tensors for r in results] == [18, 18, 18]
        # the CLI connects to the scheduler by address
        cli = tmp_path / "cli"
        cli.mkdir()
        r = subprocess.run([sys.executable, "-m", "reorder", "convert", *map(str, srcs),
                            "--out-dir", str(cli), "-t", "onednn-int8", "--scheduler",
                            cluster.scheduler_address], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert "total" in r.stdout
    for s in srcs:
        name = s.stem + ".safetensors"
        assert (local / name).read_bytes() == (remote / name).read_bytes() \
            == (cli / name).read_bytes()
