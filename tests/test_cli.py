"""The command line and show_config()."""
import io
import json
import subprocess
import sys

import pytest

import reorder as ro
from reorder.__main__ import main


def test_show_config_lists_build_facts():
    buf = io.StringIO()
    ro.show_config(file=buf)
    text = buf.getvalue()
    for key in ("reorder", "openmp", "threads", "build flags", "cpu"):
        assert key in text


def test_info(capsys):
    assert main(["info"]) == 0
    assert "openmp" in capsys.readouterr().out


def test_explain_layout_and_plan(capsys):
    assert main(["explain", "OIhw4i16o4i", "--dims", "20x10x3x3"]) == 0
    out = capsys.readouterr().out
    assert "padded 32x16x3x3" in out and "4b" in out
    assert main(["explain", "nchw", "nChw16c", "--dims", "2x17x5x5"]) == 0
    assert "kernel" in capsys.readouterr().out


def test_bad_tag_is_reported_not_raised(capsys):
    assert main(["explain", "nChw16q", "--dims", "2x17x5x5"]) == 2
    assert "unknown letter" in capsys.readouterr().err


def test_bench_writes_json(tmp_path, capsys):
    path = tmp_path / "out.json"
    assert main(["bench", "nchw", "nhwc", "--dims", "2x8x9x9", "--threads", "1", "--repeat", "3",
                 "--json", str(path)]) == 0
    rows = json.loads(path.read_text())["rows"]
    assert rows and rows[0]["checked"] and rows[0]["ratio_to_copy"] > 0
    assert "x copy" in capsys.readouterr().out


def test_demo_runs_as_a_module():
    r = subprocess.run([sys.executable, "-m", "reorder", "demo", "--repeat", "2", "--threads", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "match the reference" in r.stdout


def test_bench_without_a_pair_runs_the_move_cases(monkeypatch, capsys):
    """`bench --dtype bf16` with no pair times every same-type move case; shrunk here to one
    small case so the test stays quick, but through the same code path."""
    import reorder.__main__ as cli
    monkeypatch.setattr(cli, "MOVE_CASES", (("nchw->nChw16c", (1, 20, 6, 6), "nchw", "nChw16c"),
                                            ("nchw->nhwc", (1, 20, 6, 6), "nchw", "nhwc")))
    assert main(["bench", "--dtype", "bf16,u8", "--threads", "1", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("bf16") == 2 and out.count(" u8 ") == 2 and "nchw->nhwc" in out


@pytest.mark.parametrize("argv", [["bench", "nchw", "--dims", "2x3x4x4"], ["bench", "nchw", "nhwc"],
                                  ["bench", "--dims", "2x3x4x4"]])
def test_bench_needs_a_whole_pair_or_none(argv, capsys):
    assert main(argv) == 2
    assert "src and" in capsys.readouterr().err
