"""Pictures: a layout as a strip of memory cells, an RGBA image grid, and speed plots.

    >>> import reorder as ro
    >>> ro.plot_layout(ro.Desc((1, 20, 2, 3), "f32", "nChw16c"), "nChw16c.png")
    >>> from reorder.plot import plot_image, plot_speed
    >>> plot_image("channel", (1, 6, 2, 3), "channel.png")

matplotlib is an optional extra (`pip install 'reorder[plot]'`), imported when a picture is
drawn. Every cell's label and colour are computed from the descriptor's own axes (offset and
logical coordinate of each physical index), so the picture shows what the kernels do.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from .core.desc import Desc
from .core.errors import ReorderError
from .core.tags import ABC

__all__ = ["plot_layout", "plot_image", "plot_speed", "rows_from_pytest_benchmark", "explain_picture",
           "MAX_CELLS"]

#: Pictures with more memory cells than this are refused: pick smaller dims.
MAX_CELLS = 4096


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("pictures need matplotlib: pip install 'reorder[plot]'") from None
    return plt


def _cells(desc):
    """Per memory cell (offset - lowest offset): the logical coordinate, or -1 for a gap
    that no index reaches. Returns (coords (cells x ndim), padded mask)."""
    shape = desc.physical_shape
    n = math.prod(shape)
    if n > MAX_CELLS:
        raise ReorderError(f"{desc!r} has {n} memory cells; pictures draw at most {MAX_CELLS}: "
                           f"pick smaller dims")
    idx = np.indices(shape).reshape(len(shape), -1)
    off = sum(i * a.stride for i, a in zip(idx, desc.axes))
    coord = np.zeros((desc.ndim, idx.shape[1]), np.int64)
    for i, a in zip(idx, desc.axes):
        coord[a.dim] += i * a.weight
    off = off - (off.min() if off.size else 0)
    span = int(off.max()) + 1 if off.size else 0
    cells = np.full((span, desc.ndim), -1, np.int64)
    cells[off] = coord.T
    padded = np.zeros(span, bool)
    padded[off] = (coord.T >= np.array(desc.dims)).any(axis=1)
    return cells, padded


def _row_length(desc):
    """(cells per row, cells per block): trailing inner blocks up to 64 cells per row for a
    blocked layout (one nChw16c block per row), trailing axes up to 32 for a plain one."""
    shape, axes = desc.physical_shape, desc.axes
    inner = math.prod(a.extent for a in axes if a.block)
    cap = 64 if desc.is_blocked else 32
    row = shape[-1] if shape else 1
    for a in reversed(axes[:-1]):
        if row * a.extent > cap or (desc.is_blocked and not a.block):
            break
        row *= a.extent
    return max(1, min(row, 64)), (inner if desc.is_blocked else 0)


def _colour_dim(desc):
    blocked = [d for d in range(desc.ndim) if desc.blocks(d)]
    if blocked:
        return blocked[0]
    return desc.axes[-1].dim if desc.axes else 0


def plot_layout(desc: Desc, path: Optional[str] = None, *, ax: Any = None,
                title: Optional[str] = None) -> Any:
    """Draw `desc` as memory: one cell per element in address order, wrapped into rows (one
    inner block per row for blocked tags), coloured by the coordinate of the blocked dim
    (else of the innermost dim), labelled with the full logical index, padding hatched,
    block boundaries in heavy lines. Saves to `path` when given; returns the figure."""
    plt = _plt()
    cells, padded = _cells(desc)
    row, block = _row_length(desc)
    nrows = max(1, -(-len(cells) // row))
    cdim = _colour_dim(desc)
    cmap = plt.get_cmap("viridis")
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(2 + row * 0.55, 24), min(1.2 + nrows * 0.45, 40)))
    else:
        fig = ax.figure
    span_c = max(desc.dims[cdim] - 1, 1) if desc.dims else 1
    label = len(cells) <= 1024
    for k, (c, pad) in enumerate(zip(cells, padded)):
        y, x = divmod(k, row)
        if c[0] < 0:
            face, hatch = "none", None
        elif pad:
            face, hatch = "white", "////"
        else:
            face, hatch = cmap(0.15 + 0.8 * c[cdim] / span_c), None
        ax.add_patch(plt.Rectangle((x, -y - 1), 1, 1, facecolor=face, edgecolor="0.6",
                                   hatch=hatch, linewidth=0.5))
        if label and c[0] >= 0:
            ax.text(x + 0.5, -y - 0.5, ",".join(map(str, c)), ha="center", va="center",
                    fontsize=5.5 if desc.ndim > 3 else 7,
                    color="0.35" if pad else ("white" if c[cdim] / span_c < 0.6 else "black"))
    if block:
        for start in range(0, len(cells), block):
            r0, r1 = start // row, (start + block - 1) // row
            x0 = start % row if block < row else 0
            w = block if block < row else row
            ax.add_patch(plt.Rectangle((x0, -r1 - 1), w, r1 - r0 + 1, fill=False,
                                       edgecolor="black", linewidth=1.8))
    ax.set_xlim(-0.2, row + 0.2)
    ax.set_ylim(-nrows - 0.2, 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    name = desc.name if desc.tag is not None or desc.abc else "strided"
    ax.set_title(title or f"{name}: dims {'x'.join(map(str, desc.dims))}, colour = "
                 f"{ABC[cdim]} coordinate, hatched = padding"
                 + (f", boxes = blocks of {block}" if block else ""), fontsize=9)
    if path is not None:
        fig.savefig(path, dpi=130, bbox_inches="tight")
    return fig


def plot_image(kind: str, dims: Sequence[int], path: Optional[str] = None) -> Any:
    """Draw the RGBA image of image kind `kind` (see reorder.opencl.KINDS) holding a tensor
    of logical `dims`: one square per pixel, split into its R, G, B, A lanes, each labelled
    with the tensor coordinate it holds; zero padding lanes hatched."""
    from .opencl import KINDS, image_shape, to_image_array
    plt = _plt()
    if kind not in KINDS:
        raise ReorderError(f"unknown image kind {kind!r}; valid kinds: {', '.join(KINDS)}")
    k = KINDS[kind]
    if k.winograd:
        raise ReorderError(f"{kind} holds transformed filter values, not tensor elements: "
                           f"its lanes have no tensor coordinate to draw")
    dims = tuple(int(d) for d in dims)
    n = math.prod(dims)
    if n >= 1 << 24 or n > MAX_CELLS:
        raise ReorderError(f"{n} elements; images draw at most {MAX_CELLS}: pick smaller dims")
    # each element carries its own flat index + 1, so a lane says where it came from
    x = (np.arange(n, dtype=np.float32) + 1).reshape(dims)
    img = to_image_array(x, kind, layout="abcd"[:len(dims)])
    width, height = image_shape(kind, dims)
    assert img.shape == (height, width, 4)
    if height * width * 4 > MAX_CELLS:
        raise ReorderError(f"a {width}x{height} image; pictures draw at most "
                           f"{MAX_CELLS // 4} pixels: pick smaller dims")
    cdim = 1 if len(dims) > 1 else 0
    span_c = max(dims[cdim] - 1, 1)
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(min(1.5 + width * 1.3, 30), min(1.2 + height * 0.5, 30)))
    for y in range(height):
        for px in range(width):
            for lane in range(4):
                v = int(img[y, px, lane])
                x0 = px * 4 + lane
                if v == 0:
                    ax.add_patch(plt.Rectangle((x0, -y - 1), 1, 1, facecolor="white",
                                               edgecolor="0.6", hatch="////", linewidth=0.5))
                    continue
                c = np.unravel_index(v - 1, dims)
                ax.add_patch(plt.Rectangle((x0, -y - 1), 1, 1, edgecolor="0.6", linewidth=0.5,
                                           facecolor=cmap(0.15 + 0.8 * c[cdim] / span_c)))
                ax.text(x0 + 0.5, -y - 0.5, ",".join(map(str, c)), ha="center", va="center",
                        fontsize=5.5, color="white" if c[cdim] / span_c < 0.6 else "black")
            ax.add_patch(plt.Rectangle((px * 4, -y - 1), 4, 1, fill=False, edgecolor="black",
                                       linewidth=1.6))
    for px in range(width):
        ax.text(px * 4 + 2, 0.3, f"x={px}", ha="center", fontsize=7)
    for y in range(height):
        ax.text(-0.3, -y - 0.5, f"y={y}", ha="right", va="center", fontsize=7)
    ax.set_xlim(-1.5, width * 4 + 0.2)
    ax.set_ylim(-height - 0.2, 1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{kind} image ({k.engine_name}) of {k.dims} = {'x'.join(map(str, dims))}: "
                 f"{width} x {height} pixels, lanes RGBA; colour = {k.dims[cdim]}, "
                 f"hatched = zero padding", fontsize=9)
    if path is not None:
        fig.savefig(path, dpi=130, bbox_inches="tight")
    return fig


def explain_picture(tag: str, dst: Optional[str], dims: Sequence[int], dtype: str,
                    path: str) -> str:
    """The picture `python -m reorder explain ... --png` draws: one layout, a pair (src above
    dst), or the RGBA grid when `tag` names an image kind. Returns which: layout, pair, image."""
    from .opencl import KINDS
    if tag in KINDS and not dst:
        plot_image(tag, dims, path)
        return "image"
    if not dst:
        plot_layout(Desc(dims, dtype, tag), path)
        return "layout"
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(12, 10))
    for ax, t in zip(axes, (tag, dst)):
        plot_layout(Desc(dims, dtype, t), ax=ax)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    return "pair"


def plot_speed(rows: Iterable[Mapping[str, Any]], path: Optional[str] = None, *,
               title: str = "reorder speed") -> Any:
    """Bar chart of GB/s per case and thread count, with the copy of the same bytes in the
    same run as a black line over each bar. `rows`: the dicts `python -m reorder bench
    --json` writes (case, dims, dtype, threads, gbps, copy_gbps), or
    rows_from_pytest_benchmark()'s."""
    plt = _plt()
    rows = list(rows)
    if not rows:
        raise ReorderError("no rows to plot")
    cases = []
    for r in rows:
        label = f"{r['case']}\n{r.get('dims', '')} {r.get('dtype', '')}".strip()
        if label not in cases:
            cases.append(label)
    threads = sorted({int(r["threads"]) for r in rows})
    width = 0.8 / len(threads)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(cases) + 2), 4.5))
    colours = plt.get_cmap("tab10")
    for j, t in enumerate(threads):
        xs, ys, cs = [], [], []
        for r in rows:
            if int(r["threads"]) != t:
                continue
            label = f"{r['case']}\n{r.get('dims', '')} {r.get('dtype', '')}".strip()
            xs.append(cases.index(label) - 0.4 + width * (j + 0.5))
            ys.append(float(r["gbps"]))
            cs.append(r.get("copy_gbps"))
        ax.bar(xs, ys, width * 0.9, color=colours(j), label=f"{t} thread{'s' * (t > 1)}")
        for x, c in zip(xs, cs):
            if c:
                ax.hlines(float(c), x - width * 0.45, x + width * 0.45, colors="black",
                          linewidth=2)
    ax.plot([], [], color="black", linewidth=2, label="np.copyto, same bytes")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, fontsize=7)
    ax.set_ylabel("GB/s (src + dst bytes / median time)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=130)
    return fig


def rows_from_pytest_benchmark(data: Mapping[str, Any]) -> list:
    """Rows for plot_speed() from a pytest-benchmark JSON (`--benchmark-json`) of this
    project's benchmarks: each group's `reorder` median against its `copy` median."""
    groups: dict = {}
    for b in data.get("benchmarks", []):
        info = b.get("extra_info", {})
        if "impl" not in info or "bytes" not in info:
            continue
        g = groups.setdefault(info.get("group", b.get("group")), {})
        g[info["impl"]] = (info["bytes"] / b["stats"]["median"] / 1e9, b.get("params") or {})
    rows = []
    for group, impls in groups.items():
        if "reorder" not in impls:
            continue
        gbps, params = impls["reorder"]
        words = group.split()
        threads = params.get("threads")
        if threads is None and words[-1].endswith("T") and words[-1][:-1].isdigit():
            threads = int(words[-1][:-1])
        if words[-1].endswith("T") and words[-1][:-1].isdigit():
            words = words[:-1]
        rows.append({"case": " ".join(words), "threads": int(threads or 1), "gbps": gbps,
                     "copy_gbps": impls["copy"][0] if "copy" in impls else None})
    if not rows:
        raise ReorderError("the JSON holds no reorder benchmarks with extra_info (impl, bytes)")
    return rows
