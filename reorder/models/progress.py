"""Progress bars (tqdm, only on a terminal) and the final table."""
import sys

from ._extras import available


class Bar:
    """A tqdm bar counting bytes, or nothing when quiet, not on a terminal or without tqdm."""

    def __init__(self, total, desc, enabled, position=0, unit="B"):
        self.bar = None
        if enabled:
            import tqdm
            self.bar = tqdm.tqdm(total=total, desc=desc, unit=unit, unit_scale=True,
                                 leave=True, position=position, file=sys.stderr,
                                 dynamic_ncols=True)

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def wanted(progress):
    """progress=None: on when stderr is a terminal and tqdm is installed."""
    if progress is None:
        return sys.stderr.isatty() and available("tqdm")
    if progress and not available("tqdm"):
        from ._extras import require
        require("tqdm", "progress bars")
    return bool(progress)


def table(results):
    """The final table: one row per file and a total."""
    cols = ["file", "target", "tensors", "MB in", "MB out", "time s", "GB/s"]
    rows = []
    for r in results:
        rows.append([r.name, r.target, str(r.tensors), f"{r.bytes_in / 1e6:.3f}",
                     f"{r.bytes_out / 1e6:.3f}", f"{r.seconds:.3f}", f"{r.gbps:.3f}"])
    if len(results) > 1:
        t = sum(r.seconds for r in results)
        bi, bo = sum(r.bytes_in for r in results), sum(r.bytes_out for r in results)
        rows.append(["total", "", str(sum(r.tensors for r in results)), f"{bi / 1e6:.3f}",
                     f"{bo / 1e6:.3f}", f"{t:.3f}", f"{(bi + bo) / t / 1e9 if t else 0:.3f}"])
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(cols, widths)))]
    lines.append("-" * len(lines[0]))
    for row in rows:
        lines.append("  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in
                               enumerate(zip(row, widths))))
    lines.append("GB/s = (bytes in + bytes out) / time")
    return "\n".join(lines)
