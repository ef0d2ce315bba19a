"""benchmarks/make_performance_table.py: the performance page's table from a small
pytest-benchmark JSON written by hand, with the figures worked out here."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "make_performance_table.py"


@pytest.fixture(scope="module")
def mpt():
    spec = importlib.util.spec_from_file_location("make_performance_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bench(group, impl, nbytes, median, **params):
    return {"name": f"test_speed[{impl}-{group}]", "fullname": f"bench::{group}::{impl}",
            "group": group, "params": params, "stats": {"median": median, "mean": median},
            "extra_info": {"group": group, "impl": impl, "bytes": nbytes}}


SAMPLE = {
    "machine_info": {"cpu": {"brand_raw": "Example CPU", "count": 2},
                     "reorder": {"simd": "avx512 (16x16 tiles)", "reorder": "0.1.0"}},
    "datetime": "2026-01-02T03:04:05",
    "benchmarks": [
        # 8 MB in 2 ms against a copy of 1 ms: 4.0 GB/s, 0.50 x copy
        _bench("nchw->nhwc 8x256x56x56 f32 1T", "reorder", 8_000_000, 0.002, threads=1),
        _bench("nchw->nhwc 8x256x56x56 f32 1T", "copy", 8_000_000, 0.001, threads=1),
        _bench("nchw->nhwc 8x256x56x56 f32 1T", "numpy", 8_000_000, 0.008, threads=1),
        # 2 threads: 8 MB in 0.5 ms against 1 ms: 16.0 GB/s, 2.00 x copy
        _bench("nchw->nhwc 8x256x56x56 f32 2T", "reorder", 8_000_000, 0.0005, threads=2),
        _bench("nchw->nhwc 8x256x56x56 f32 2T", "copy", 8_000_000, 0.001, threads=2),
        # a group without a copy, and without a thread count in its name
        _bench("call overhead 1 KiB", "reorder", 2048, 2e-6),
        # a benchmark that filed no case is left out
        {"name": "other", "group": None, "stats": {"median": 1.0}, "extra_info": {}},
    ],
}


def _rows(text):
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]


def test_table_figures(mpt):
    text = mpt.table(SAMPLE)
    assert text.startswith("Measured on: Example CPU, 2 logical CPUs, simd avx512 (16x16 tiles),"
                           " reorder 0.1.0; measured 2026-01-02.")
    assert _rows(text) == [
        ["call overhead 1 KiB", "-", "reorder", "0.002", "1.0", "-"],
        ["nchw->nhwc 8x256x56x56 f32", "1", "numpy", "8.000", "1.0", "0.12"],
        ["nchw->nhwc 8x256x56x56 f32", "1", "reorder", "2.000", "4.0", "0.50"],
        ["nchw->nhwc 8x256x56x56 f32", "2", "reorder", "0.500", "16.0", "2.00"],
    ]


def test_cli_writes_the_file(mpt, tmp_path, capsys):
    src = tmp_path / "speed.json"
    src.write_text(json.dumps(SAMPLE))
    out = tmp_path / "table.md"
    assert mpt.main([str(src), str(out)]) == 0
    assert out.read_text() == mpt.table(SAMPLE)
    assert "4 rows" in capsys.readouterr().out
    assert mpt.main([str(src)]) == 0                     # no file: the table on stdout
    assert capsys.readouterr().out == mpt.table(SAMPLE)


@pytest.mark.parametrize("data, message", [
    ({"nothing": []}, "no 'benchmarks' list"),
    ({"benchmarks": [{"extra_info": {}, "stats": {"median": 1}}]}, "holds no benchmark"),
    ({"benchmarks": [_bench("g", "reorder", 10, 0.0)]}, "is not a positive time"),
    ({"benchmarks": [_bench("g", "reorder", 10, float("nan"))]}, "is not a positive time"),
])
def test_bad_json_is_refused(mpt, data, message):
    with pytest.raises(mpt.TableError, match=message):
        mpt.table(data)


def test_cli_reports_bad_input(mpt, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert mpt.main([str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert mpt.main([str(tmp_path / "missing.json")]) == 2


def test_committed_table_is_the_scripts_format(mpt):
    """The table the performance page includes came from the script: same heading and
    columns (a hand-edited table would drift from what the script writes)."""
    text = (ROOT / "docs" / "performance-table.md").read_text()
    header = mpt.table(SAMPLE).splitlines()[2:4]
    assert text.splitlines()[0].startswith("Measured on: ")
    assert text.splitlines()[2:4] == header
    assert len(_rows(text)) >= 10
