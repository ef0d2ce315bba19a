"""Command line: python -m reorder info | explain | demo | bench | convert."""
import argparse
import json
import sys

import numpy as np

from . import __version__
from .front.api import plan as make_plan
from .tools.bench_cases import MOVE_CASES
from .front.config import show_config
from .core.desc import Desc, _fmt
from .core.errors import ReorderError
from .testing.reference import abstract_tag, from_logical, reference_reorder
from .tools.timing import measure

# The demo's built-in data: an activation whose C is not a multiple of 16, int8-style
# weights with both I and O padded, and both back.
DEMO_CASES = (
    ("activation", (8, 30, 56, 56), "nchw", "nChw16c"),
    ("activation back", (8, 30, 56, 56), "nChw16c", "nchw"),
    ("weights", (200, 120, 3, 3), "oihw", "OIhw4i16o4i"),
    ("weights back", (200, 120, 3, 3), "OIhw4i16o4i", "oihw"),
)


def _dims(text):
    try:
        dims = tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"dims look like 8x256x56x56, got {text!r}") from None
    return dims


def _ints(text):
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of integers, got {text!r}") from None


def _table(rows, columns):
    widths = [max(len(c), *(len(str(r[i])) for r in rows)) for i, c in enumerate(columns)]
    line = "  ".join(f"{c:>{w}}" for c, w in zip(columns, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(f"{str(v):>{w}}" for v, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _source(dims, tag, dtype, rng, check=True):
    """Random data laid out as `tag`, with zero padding (as a real blocked tensor has); placed
    by the reference when the run is checked, so the check does not trust the library."""
    plain = Desc(dims, dtype)
    logical = rng.standard_normal(dims).astype(plain.dtype.storage) if plain.dtype.kind == "float" \
        else rng.integers(-100, 100, dims).astype(plain.dtype.storage)
    return from_logical(logical, tag) if check else make_plan(plain, Desc(dims, dtype, tag))(logical)


def _matches_reference(out, x, dims, src_tag, dst_tag):
    """out is bit for bit the independent reference's result, padding included, and of the
    same physical shape."""
    exp = reference_reorder(x, dims, src_tag, dst_tag)
    return out.shape == exp.shape and np.array_equal(out.view(np.uint8), exp.view(np.uint8))


def _run_case(name, dims, src_tag, dst_tag, dtype, threads_list, repeat, rng, check=True):
    p = make_plan(Desc(dims, dtype, src_tag), Desc(dims, dtype, dst_tag))      # bad input fails here
    if check:
        for tag in (src_tag, dst_tag):
            try:
                abstract_tag(tag, len(dims))
            except ValueError as exc:
                raise ReorderError(f"{exc}; run with --no-check to time it unchecked") from None
    x = _source(dims, src_tag, dtype, rng, check)
    rows = []
    for n in threads_list:
        r = measure(p, x, n, repeat)
        if check and not _matches_reference(r["out"], x, dims, src_tag, dst_tag):
            raise SystemExit(f"MISMATCH: {name} {src_tag}->{dst_tag} {_fmt(dims)} threads={n} "
                             f"differs from the reference")
        rows.append({"case": name, "src": src_tag, "dst": dst_tag, "dims": _fmt(dims), "dtype": dtype,
                     "threads": n, "kernel": p.kernel, "bytes": r["bytes"], "time_ms": r["time_s"] * 1e3,
                     "gbps": r["gbps"], "copy_gbps": r["copy_gbps"], "ratio_to_copy": r["ratio_to_copy"],
                     "checked": check})
    return rows


def _print_rows(rows):
    cols = ["case", "shape", "dtype", "thr", "kernel", "MB", "time ms", "GB/s", "copy GB/s", "x copy"]
    print(_table([[r["case"], r["dims"], r["dtype"], r["threads"], r["kernel"], f"{r['bytes'] / 1e6:.1f}",
                   f"{r['time_ms']:.3f}", f"{r['gbps']:.1f}", f"{r['copy_gbps']:.1f}",
                   f"{r['ratio_to_copy']:.2f}"] for r in rows], cols))
    print("GB/s counts src + dst bytes; 'x copy' = time of np.copyto of (src+dst)/2 bytes / reorder time, "
          "same run, medians.")


def cmd_info(args):
    show_config()
    from .opencl import report_lines
    print("\n".join(report_lines()))


def cmd_explain(args):
    if args.png:
        from .plot import explain_picture
        what = explain_picture(args.tag, args.dst, args.dims, args.dtype, args.png)
        print(f"wrote {args.png} ({what})")
        if what == "image":
            return
    if args.dst:
        print(make_plan(Desc(args.dims, args.dtype, args.tag), Desc(args.dims, args.dtype, args.dst),
                        threads=args.threads).explain())
    else:
        print(Desc(args.dims, args.dtype, args.tag).explain())


def cmd_demo(args):
    rng = np.random.default_rng(0)
    rows = []
    for name, dims, s, d in DEMO_CASES:
        rows += _run_case(name, dims, s, d, "f32", args.threads, args.repeat, rng)
    _print_rows(rows)
    print(f"all {len(rows)} results match the reference bit for bit (padding included).")


def _bench_cases(args):
    """(name, dims, src, dst) to time: the pair given, or without one every same-type move
    case of the speed targets (bench_cases.py)."""
    if args.src is None:
        if args.dims is not None:
            raise ReorderError("--dims needs a src and dst tag; without them the built-in cases run")
        return MOVE_CASES
    if args.dst is None or args.dims is None:
        raise ReorderError("bench needs both a src and a dst tag, and --dims (or neither, for "
                           "the built-in cases)")
    return ((f"{args.src}->{args.dst}", args.dims, args.src, args.dst),)


def cmd_bench(args):
    rng = np.random.default_rng(0)
    rows = []
    cases = _bench_cases(args)
    for dtype in args.dtype.split(","):
        for name, dims, src, dst in cases:
            rows += _run_case(name, dims, src, dst, dtype, args.threads, args.repeat, rng,
                              check=not args.no_check)
    _print_rows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"reorder": __version__, "rows": rows}, f, indent=1)
    if args.plot:
        from .plot import plot_speed
        title = f"{args.src} -> {args.dst}, {_fmt(args.dims)}" if args.src else "same-type moves"
        plot_speed(rows, args.plot, title=title)
        print(f"wrote {args.plot}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m reorder", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="build, OpenMP, threads and CPU").set_defaults(fn=cmd_info)
    ex = sub.add_parser("explain", help="explain a layout, or the plan between two")
    ex.add_argument("tag")
    ex.add_argument("dst", nargs="?")
    ex.add_argument("--dims", type=_dims, required=True)
    ex.add_argument("--dtype", default="f32")
    ex.add_argument("--threads", type=int)
    ex.add_argument("--png", help="draw the layout(s), or an image kind's RGBA grid "
                    "(explain channel --dims 1x6x2x3 --png c.png); needs matplotlib")
    ex.set_defaults(fn=cmd_explain)
    de = sub.add_parser("demo", help="reorder a built-in set, check it, print speeds")
    de.add_argument("--threads", type=_ints, default=[1, 2])
    de.add_argument("--repeat", type=int, default=15)
    de.set_defaults(fn=cmd_demo)
    be = sub.add_parser("bench", help="time one reorder (or, without a pair, every same-type "
                        "move case of the speed targets) against a copy of the same bytes")
    be.add_argument("src", nargs="?")
    be.add_argument("dst", nargs="?")
    be.add_argument("--dims", type=_dims)
    be.add_argument("--dtype", default="f32", help="comma list, e.g. f32,bf16,s8")
    be.add_argument("--threads", type=_ints, default=[1, 2])
    be.add_argument("--repeat", type=int, default=30)
    be.add_argument("--json", help="also write the rows to this file")
    be.add_argument("--plot", help="draw GB/s per thread count beside the copy to this PNG")
    be.add_argument("--no-check", action="store_true", help="skip the reference check (huge tensors)")
    be.set_defaults(fn=cmd_bench)
    from .models.cli import add_parser as add_convert
    add_convert(sub)
    args = ap.parse_args(argv)
    try:
        args.fn(args)
    except ReorderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
