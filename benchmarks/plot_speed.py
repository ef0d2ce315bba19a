"""Draw the speed figure (GB/s per case and thread count, with the copy of the same bytes)
from a pytest-benchmark JSON of this suite:

    python -m pytest benchmarks/test_layout_speed.py --benchmark-json speed.json
    python benchmarks/plot_speed.py speed.json speed.png
"""
import argparse
import json

from reorder.plot import plot_speed, rows_from_pytest_benchmark


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="pytest-benchmark JSON (--benchmark-json)")
    ap.add_argument("png", help="where to write the figure")
    ap.add_argument("--title", default="reorder speed (pytest-benchmark medians)")
    args = ap.parse_args(argv)
    with open(args.json) as f:
        rows = rows_from_pytest_benchmark(json.load(f))
    plot_speed(rows, args.png, title=args.title)
    print(f"wrote {args.png}: {len(rows)} bars")


if __name__ == "__main__":
    main()
