"""Write the performance page's table from a pytest-benchmark JSON of this suite:

    python -m pytest benchmarks --benchmark-json speed.json
    python benchmarks/make_performance_table.py speed.json docs/performance-table.md

Every benchmark of the suite files its case as `extra_info` (benchmarks/conftest.py:
`group`, `impl`, `bytes` = source + destination bytes); each group holds `reorder` (or
another implementation) and `copy`, np.copyto of the same number of bytes timed in the same
run. A row gives the implementation's median, its GB/s (bytes over the median) and the
ratio to the copy's median (above 1: faster than a copy of the same bytes). The machine the
JSON was measured on heads the table, as pytest-benchmark recorded it.

Only the JSON is read: no part of the library is imported, so a table can be written on a
machine other than the one measured.
"""
import argparse
import json
import math
import sys

COPY = "copy"


class TableError(ValueError):
    """The JSON is not pytest-benchmark's, or holds none of this suite's cases."""


def _threads(group):
    """(case, threads) from a group name that ends in '<n>T' (test_layout_speed.py's
    `... f32 2T`); threads None where it does not say."""
    words = group.split()
    if words and words[-1].endswith("T") and words[-1][:-1].isdigit():
        return " ".join(words[:-1]), int(words[-1][:-1])
    return group, None


def collect(data):
    """{group: {impl: (median_s, bytes)}} from pytest-benchmark's JSON (a dict)."""
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise TableError("not a pytest-benchmark JSON: no 'benchmarks' list")
    groups = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info") or {}
        if not {"group", "impl", "bytes"} <= info.keys():
            continue        # a benchmark that filed no case (none in this suite today)
        median = (b.get("stats") or {}).get("median")
        if not isinstance(median, (int, float)) or not median > 0 or not math.isfinite(median):
            raise TableError(f"benchmark {b.get('fullname', b.get('name'))!r}: "
                             f"median {median!r} is not a positive time")
        groups.setdefault(info["group"], {})[info["impl"]] = (float(median), int(info["bytes"]))
    if not groups:
        raise TableError("the JSON holds no benchmark with extra_info group, impl and bytes "
                         "(run this suite: python -m pytest benchmarks --benchmark-json=...)")
    return groups


def _machine(data):
    m = data.get("machine_info") or {}
    cpu = m.get("cpu") or {}
    name = cpu.get("brand_raw") or m.get("processor") or "unknown CPU"
    parts = [name]
    if cpu.get("count"):
        parts.append(f"{cpu['count']} logical CPUs")
    cfg = m.get("reorder") or {}       # reorder.config.config_dict(), filed by conftest.py
    for key in ("simd", "last-level cache", "streaming stores", "reorder"):
        if key in cfg:
            parts.append(f"{key} {cfg[key]}")
    when = (data.get("datetime") or "")[:10]
    return ", ".join(str(p) for p in parts) + (f"; measured {when}" if when else "")


def table(data):
    """The markdown table (a str, ending in a newline) for a pytest-benchmark JSON dict."""
    groups = collect(data)
    lines = [f"Measured on: {_machine(data)}.", "",
             "| case | threads | implementation | median ms | GB/s | x copy |",
             "|---|---:|---|---:|---:|---:|"]
    rows = []
    for group, impls in groups.items():
        case, threads = _threads(group)
        copy = impls.get(COPY)
        for impl, (median, nbytes) in impls.items():
            if impl == COPY:
                continue
            ratio = f"{copy[0] / median:.2f}" if copy else "-"
            rows.append((case, threads or 0, impl, median, nbytes, ratio))
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    for case, threads, impl, median, nbytes, ratio in rows:
        lines.append(f"| {case.replace('|', '/')} | {threads or '-'} | {impl} | {median * 1e3:.3f} "
                     f"| {nbytes / median / 1e9:.1f} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="pytest-benchmark JSON (--benchmark-json)")
    ap.add_argument("out", nargs="?", help="markdown file to write (default: standard output)")
    args = ap.parse_args(argv)
    try:
        with open(args.json) as f:
            data = json.load(f)
        text = table(data)
    except (OSError, json.JSONDecodeError, TableError) as e:
        print(f"{args.json}: {e}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"wrote {args.out}: {text.count(chr(10)) - 4} rows")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
