"""Pictures of layouts and images, and speed plots: what each cell says is checked against
the reference offsets and the MACE image formulas, not against the library's own Desc."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import reorder as ro
from reorder.__main__ import main

from reorder.testing.reference import offsets_of_all, ref_padded_dims

plt = pytest.importorskip("matplotlib.pyplot")
plot = pytest.importorskip("reorder.plot")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.mark.parametrize("tag,dims", [
    ("aBcd16b", (1, 20, 2, 3)), ("aBcd8b", (2, 3, 1, 2)), ("ABcd4b16a4b", (20, 6, 1, 1)),
    ("acdb", (1, 5, 2, 3)), ("abcd", (2, 3, 2, 2)), ("ABcd2a2b", (3, 3, 1, 2)), ("aBc4b", (0, 5, 2)),
])
def test_cells_match_reference_offsets(tag, dims):
    """Every memory cell holds the logical index the reference places at that offset, and is
    padding exactly where that index is past the dims."""
    cells, padded = plot._cells(ro.Desc(dims, "f32", tag))
    offs, grid = offsets_of_all(dims, tag, padded=True)
    assert len(cells) == (int(offs.max()) + 1 if offs.size else 0)
    assert np.array_equal(cells[offs], grid.T)
    assert np.array_equal(padded[offs], (grid.T >= np.array(dims)).any(axis=1))
    assert len(offs) == int(np.prod(ref_padded_dims(dims, tag)))


def _labels(fig):
    return {(round(t.get_position()[0] - 0.5), round(-t.get_position()[1] - 0.5)): t.get_text()
            for t in fig.axes[0].texts if "," in t.get_text()}


def test_layout_picture(tmp_path):
    d = ro.Desc((1, 20, 2, 3), "f32", "nChw16c")
    path = tmp_path / "nChw16c.png"
    fig = ro.plot_layout(d, str(path))
    assert path.read_bytes()[:8] == PNG
    labels = _labels(fig)
    # one nChw16c block per row: row r, column k holds c = 16 * (r // 6) + k, (h, w) = r % 6
    for (x, y), text in labels.items():
        assert text == f"0,{16 * (y // 6) + x},{(y % 6) // 3},{y % 3}"
    assert len(labels) == 2 * 6 * 16
    hatched = [p for p in fig.axes[0].patches if p.get_hatch()]
    assert len(hatched) == 12 * 6           # channels 20..31 at each of the 6 (h, w)
    boxes = [p for p in fig.axes[0].patches if not p.get_fill()]
    assert len(boxes) == 12                 # one box per block of 16
    assert "hatched = padding" in fig.axes[0].get_title()


def test_image_picture_matches_mace_formula(tmp_path):
    """IN_OUT_CHANNEL: width = ceil(C/4) * W, height = N * H; pixel (x, y) lane l holds
    n = y // H, h = y % H, c = 4 * (x // W) + l, w = x % W; lanes past C are zero."""
    n, c, h, w = 2, 6, 2, 3
    path = tmp_path / "channel.png"
    fig = plot.plot_image("channel", (n, c, h, w), str(path))
    assert path.read_bytes()[:8] == PNG
    labels = _labels(fig)
    width, height = -(-c // 4) * w, n * h
    seen = 0
    for y in range(height):
        for x in range(width):
            for lane in range(4):
                cc = 4 * (x // w) + lane
                got = labels.get((4 * x + lane, y))
                if cc >= c:
                    assert got is None
                else:
                    assert got == f"{y // h},{cc},{y % h},{x % w}"
                    seen += 1
    assert seen == n * c * h * w
    with pytest.raises(ValueError, match="transformed filter values"):
        plot.plot_image("winograd2", (4, 4, 3, 3))
    with pytest.raises(ValueError, match="unknown image kind 'chanel'"):
        plot.plot_image("chanel", (1, 4, 2, 2))


def test_too_big_and_missing_matplotlib(monkeypatch):
    with pytest.raises(ValueError, match="pictures draw at most 4096"):
        ro.plot_layout(ro.Desc((8, 64, 16, 16), "f32", "nChw16c"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'reorder\[plot\]'"):
        ro.plot_layout(ro.Desc((1, 4, 1, 1), "f32", "nchw"))


def _pytest_benchmark_json():
    """The shape of a pytest-benchmark JSON of benchmarks/test_layout_speed.py."""
    out = []
    for threads in (1, 2):
        group = f"nchw->nChw16c 8x256x56x56 f32 {threads}T"
        for impl, median in (("reorder", 0.004 / threads), ("copy", 0.005 / threads),
                             ("numpy", 0.02)):
            if impl == "numpy" and threads == 2:
                continue
            out.append({"group": group, "params": {"threads": threads, "impl": impl},
                        "stats": {"median": median},
                        "extra_info": {"group": group, "impl": impl, "bytes": 51380224}})
    return {"benchmarks": out}


def test_speed_plot_from_pytest_benchmark(tmp_path):
    rows = plot.rows_from_pytest_benchmark(_pytest_benchmark_json())
    assert sorted((r["threads"], round(r["gbps"], 2), round(r["copy_gbps"], 2)) for r in rows) \
        == [(1, 12.85, 10.28), (2, 25.69, 20.55)]
    assert {r["case"] for r in rows} == {"nchw->nChw16c 8x256x56x56 f32"}
    src = tmp_path / "speed.json"
    src.write_text(json.dumps(_pytest_benchmark_json()))
    bench_dir = str(Path(__file__).resolve().parent.parent / "benchmarks")
    sys.path.insert(0, bench_dir)
    try:
        import plot_speed
        plot_speed.main([str(src), str(tmp_path / "speed.png")])
    finally:
        sys.path.remove(bench_dir)
    assert (tmp_path / "speed.png").read_bytes()[:8] == PNG
    fig = plot.plot_speed(rows)
    bars = [p for p in fig.axes[0].patches]
    assert sorted(round(b.get_height(), 2) for b in bars) == [12.85, 25.69]
    with pytest.raises(ValueError, match="no reorder benchmarks"):
        plot.rows_from_pytest_benchmark({"benchmarks": []})


def test_cli_png_and_plot(tmp_path, capsys):
    for args in (["explain", "nChw16c", "--dims", "1x20x2x3"],
                 ["explain", "nchw", "nChw8c", "--dims", "1x10x2x2"],
                 ["explain", "channel", "--dims", "1x6x2x3"]):
        path = tmp_path / f"{len(args)}{args[1]}.png"
        assert main(args + ["--png", str(path)]) == 0
        assert path.read_bytes()[:8] == PNG
    out = capsys.readouterr().out
    assert "(layout)" in out and "(pair)" in out and "(image)" in out
    path = tmp_path / "bench.png"
    assert main(["bench", "nchw", "nChw16c", "--dims", "1x17x4x4", "--threads", "1,2",
                 "--repeat", "2", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == PNG
