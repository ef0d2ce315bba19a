"""Whole-model conversion against shutil.copyfile of the same input file, in the same run.

REORDER_BENCH_MODEL_MB sets the model size (default 100 MB; CI's untimed run uses a small one
when --benchmark-disable is given)."""
import os
import shutil

import numpy as np
import pytest

import reorder as ro

pytest.importorskip("safetensors")


def _size_mb(config):
    default = 4 if config.getoption("benchmark_disable", False) else 100
    return float(os.environ.get("REORDER_BENCH_MODEL_MB", default))


@pytest.fixture(scope="module")
def model(tmp_path_factory, request):
    """A ResNet-50-like mix of conv weights (3x3 and 1x1, 64..512 channels) as safetensors."""
    from safetensors.numpy import save_file
    budget = _size_mb(request.config) * 1e6
    rng = np.random.default_rng(0)
    shapes = [(64, 64, 3, 3), (256, 64, 1, 1), (128, 128, 3, 3), (512, 128, 1, 1),
              (256, 256, 3, 3), (1024, 256, 1, 1), (512, 512, 3, 3), (2048, 512, 1, 1)]
    tensors, total, i = {}, 0, 0
    while total < budget:
        s = shapes[i % len(shapes)]
        if total + np.prod(s) * 4 > budget and tensors:
            s = (64, 64, 3, 3)
        tensors[f"layer{i}.conv.weight"] = rng.standard_normal(s).astype(np.float32)
        tensors[f"layer{i}.conv.bias"] = rng.standard_normal(s[0]).astype(np.float32)
        total += (np.prod(s) + s[0]) * 4
        i += 1
    path = tmp_path_factory.mktemp("bench") / "model.safetensors"
    save_file(tensors, str(path))
    rules = path.parent / "rules.toml"
    rules.write_text('[[rule]]\nmatch = "*.conv.weight"\nrole = "conv"\n'
                     '[[rule]]\nmatch = "*.bias"\nrole = "bias"\n')
    return path, rules, os.path.getsize(path)


@pytest.mark.parametrize("target", ["copyfile", "onednn-f32", "onednn-int8", "mace-gpu",
                                    "mnn-gpu"])
def test_convert_model(benchmark, record, model, tmp_path, target):
    path, rules, size = model
    out = tmp_path / "out.safetensors"

    def run():
        if target == "copyfile":
            shutil.copyfile(path, out)
        else:
            ro.convert(path, out, target=target, rules=rules, force=True, progress=False)

    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    record(f"convert {size / 1e6:.0f} MB model", "copy" if target == "copyfile" else target, size)
