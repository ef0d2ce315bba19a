"""Fuzz target: random valid layout pairs and bad inputs against the independent reference,
batch by batch in child processes, within a time budget.

    python tests/fuzz_layouts.py --seconds 180            # a fresh seed, printed
    python tests/fuzz_layouts.py --seconds 60 --seed 1234 # the same cases again
    python tests/fuzz_layouts.py --seed 1234 --batch 7 --case 41   # one case, in this process

Valid pairs come from tests/layout_cases.py (the property tests' generator, driven by a numpy
Generator seeded with [seed, batch, case]), each into a poisoned out= inside guard bytes and
into a fresh result, checked bit for bit against reorder/testing/reference.py. Bad inputs (mutated tags,
wrong dims, wrong or overlapping or read-only out=, bad threads=, wrong source shapes, zero
strides) must raise ValueError or TypeError and leave the inputs as they were; where the
library accepts an input, its result is checked against the reference like any other.

A batch runs in a child process, so a crash or a hang is caught (and named by the case it
started last) instead of ending the run. The run prints its seed first and one summary line
last; it exits 1 if any case was wrong, crashed, hung or raised something other than a
ValueError or TypeError.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from layout_cases import RngPick, check_case, layout_case, random_tag  # noqa: E402
from reorder.testing.reference import (RefTagError, blocking, parse_tag, ref_physical_shape,  # noqa: E402
                       ref_reorder, uint_view)

BAD_INPUT_SHARE = 0.25          # of the cases


def case_rng(seed, batch, case):
    return np.random.default_rng([seed, batch, case])


# ---- bad inputs --------------------------------------------------------------------------------

def _mutate_tag(rng, tag):
    """One random edit of a tag: a character replaced, inserted or deleted, or a case flipped."""
    pos = int(rng.integers(0, len(tag)))
    kind = int(rng.integers(0, 4))
    junk = "!z0 19_-Aa.xX[]4"
    ch = junk[int(rng.integers(0, len(junk)))]
    if kind == 0:
        return tag[:pos] + ch + tag[pos + 1:]
    if kind == 1:
        return tag[:pos] + ch + tag[pos:]
    if kind == 2:
        return tag[:pos] + tag[pos + 1:]
    return tag[:pos] + tag[pos].swapcase() + tag[pos + 1:]


def bad_input(rng):
    """(what, call, must_fail, check): `call()` runs the library on a bad or doubtful input;
    must_fail says whether accepting it is itself a failure; check(result) -> failure strings
    for an accepted call (compares with the reference where that means something)."""
    import reorder as ro
    ndims = int(rng.integers(1, 5))
    dims = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 17], ndims))
    pick = RngPick(rng)
    stag, dtag = random_tag(pick, ndims, 2), random_tag(pick, ndims, 2)
    dtype = np.dtype(rng.choice(["uint8", "float32", "int64"]))
    sb = blocking(dims, stag)
    src_shape = ref_physical_shape(dims, stag)
    x = rng.integers(0, 100, size=src_shape).astype(dtype)
    kw = {"dims": dims}
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))

    def same(result):
        if not isinstance(result, np.ndarray) or result.shape != expected.shape or \
                not np.array_equal(uint_view(result), uint_view(expected)):
            return ["accepted, and the result differs from the reference"]
        return []

    kind = int(rng.integers(0, 9))
    if kind == 0:                       # a mutated tag: an error, or a valid tag read right
        side = int(rng.integers(0, 2))
        bad = _mutate_tag(rng, (stag, dtag)[side])
        tags = (bad, dtag) if side == 0 else (stag, bad)
        try:
            parse_tag(bad)
            blocking(dims, bad)
            ok = True
        except RefTagError:
            ok = False

        def check(result):
            if not ok:
                return []               # an alias or TVM string the reference cannot read
            want = ref_reorder(x.reshape(-1), dims, *tags)
            got = np.asarray(result).reshape(-1)
            return [] if got.size == want.size and np.array_equal(uint_view(got), uint_view(want)) \
                else ["a mutated tag was read wrong"]
        src_x = x if side == 1 or ok else x.reshape(-1)
        return f"tag {bad!r}", lambda: ro.reorder(src_x, *tags, **kw), False, check
    if kind == 1:                       # dims of the wrong rank, negative, not integers
        bad_dims = [dims + (2,), dims[:-1] or (0, 0), tuple(-v for v in dims), (1.5,) * ndims,
                    ("2",) * ndims][int(rng.integers(0, 5))]
        return f"dims {bad_dims!r}", lambda: ro.reorder(x, stag, dtag, dims=bad_dims), True, same
    if kind == 2:                       # out= of the wrong shape or element type
        shape = list(expected.shape)
        if shape and int(rng.integers(0, 2)):
            shape[int(rng.integers(0, len(shape)))] += 1
            out = np.zeros(shape, dtype)
        else:
            out = np.zeros(expected.shape, np.float16 if dtype != np.float16 else np.float32)
        return f"out= {out.shape} {out.dtype}", \
            lambda: ro.reorder(x, stag, dtag, out=out, **kw), True, same
    if kind == 3:                       # out= read-only or not C-contiguous
        out = np.zeros(expected.shape, dtype)
        if int(rng.integers(0, 2)) or out.ndim == 0 or out.shape[-1] < 2:
            out.flags.writeable = False
            what = "read-only out="
            must = True
        else:
            out = np.zeros(expected.shape[:-1] + (2 * expected.shape[-1],), dtype)[..., ::2]
            what = "strided out="
            must = False            # a strided plain destination may be supported: then exact

        def check(result):
            return same(result) + ([] if result is out else ["out= was not returned"])
        return what, lambda: ro.reorder(x, stag, dtag, out=out, **kw), must, check
    if kind == 4:                       # out= that overlaps the source
        if x.nbytes < expected.nbytes or sb["inner_blks"] == [] and x.size == 0:
            kind = 5
        else:
            out = x.reshape(-1).view(np.uint8)[:expected.nbytes].view(dtype).reshape(expected.shape)
            return "out= over the source", \
                lambda: ro.reorder(x, stag, dtag, out=out, **kw), True, same
    if kind == 5:                       # threads= out of range or of the wrong type
        threads = [0, -1, "2", 1.5, 10**9][int(rng.integers(0, 5))]
        must = threads != 10**9         # a large count is capped, not refused

        return f"threads={threads!r}", \
            lambda: ro.reorder(x, stag, dtag, threads=threads, **kw), must, same
    if kind == 6:                       # a source of the wrong shape or size
        flat = x.reshape(-1)
        # a flat buffer an element short, or the physical shape reversed (where that differs)
        bad_x = flat[:-1] if flat.size else np.zeros(1, dtype)[:0].reshape((0,) * (ndims + 1))
        if int(rng.integers(0, 2)) and x.shape != x.shape[::-1]:
            bad_x = np.ascontiguousarray(x.reshape(x.shape[::-1]))
        return f"source {bad_x.shape}", \
            lambda: ro.reorder(bad_x, stag, dtag, dims=dims), True, same
    if kind == 7:                       # a broadcast (zero-stride) plain source
        plain = "".join("abcdefghijkl"[d] for d in range(ndims))
        xb = np.broadcast_to(np.arange(dims[-1], dtype=dtype), dims)

        def check(result):
            want = ref_reorder(np.ascontiguousarray(xb).reshape(-1), dims, plain, dtag)
            return [] if np.array_equal(uint_view(np.asarray(result).reshape(-1)), uint_view(want)) \
                else ["a broadcast source was read wrong"]
        return "broadcast source", lambda: ro.reorder(xb, plain, dtag), False, check
    # kind 8: not an array at all, or an unknown dtype
    bad = [None, "abc", object(), {"a": 1}][int(rng.integers(0, 4))]
    return f"source {type(bad).__name__}", lambda: ro.reorder(bad, stag, dtag, dims=dims), True, same


def run_bad_input(rng):
    """Failure strings of one bad-input case (empty: handled as it should be)."""
    what, call, must_fail, check = bad_input(rng)
    try:
        result = call()
    except (ValueError, TypeError) as e:
        return [] if str(e).strip() else [f"{what}: {type(e).__name__} with no message"]
    except Exception as e:           # noqa: BLE001 - any other type is the failure
        return [f"{what}: {type(e).__name__}: {e}"]
    if must_fail:
        return [f"{what}: accepted"]
    return [f"{what}: {f}" for f in check(result)]


# ---- one case, one batch, the run ------------------------------------------------------------

def run_case(seed, batch, case):
    """(kind, failure strings) of one numbered case."""
    import reorder as ro
    rng = case_rng(seed, batch, case)
    if rng.random() < BAD_INPUT_SHARE:
        return "bad", run_bad_input(rng)
    c = layout_case(RngPick(rng))
    try:
        return "valid", [f"{f} [{c}]" for f in check_case(ro, c)]
    except Exception as e:           # noqa: BLE001 - a valid pair must never raise
        return "valid", [f"raised {type(e).__name__}: {e} [{c}]"]


def child(seed, batch, count):
    """Run a batch, one JSON line a case (its start first, so a crash names it)."""
    for i in range(count):
        print(json.dumps({"start": i}), flush=True)
        kind, fails = run_case(seed, batch, i)
        print(json.dumps({"case": i, "kind": kind, "fails": fails}), flush=True)
    print(json.dumps({"done": count}), flush=True)


def run(seconds, seed, count, timeout):
    start = time.monotonic()
    totals = {"trials": 0, "valid": 0, "bad": 0, "wrong": 0, "crashes": 0, "hangs": 0}
    print(f"fuzz: seed {seed} (repeat with --seed {seed}), {seconds:g} s budget, "
          f"{count} cases a batch", flush=True)
    batch = 0
    while time.monotonic() - start < seconds:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(seed), str(batch), str(count)]
        left = max(10.0, min(timeout, seconds - (time.monotonic() - start) + timeout))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            out, rc, hung = proc.stdout, proc.returncode, False
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, hung = None, True
        last, done = None, False
        for line in out.splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "start" in msg:
                last = msg["start"]
            elif "case" in msg:
                totals["trials"] += 1
                totals[msg["kind"]] += 1
                if msg["fails"]:
                    totals["wrong"] += 1
                    print(f"fuzz: WRONG --seed {seed} --batch {batch} --case {msg['case']}: "
                          f"{msg['fails'][0][:2000]}", flush=True)
            elif "done" in msg:
                done = True
        if hung:
            totals["hangs"] += 1
            print(f"fuzz: HANG --seed {seed} --batch {batch} --case {last}", flush=True)
        elif not done:
            totals["crashes"] += 1
            err = proc.stderr.strip().splitlines()[-5:]
            print(f"fuzz: CRASH (exit {rc}) --seed {seed} --batch {batch} --case {last}: "
                  + " | ".join(err), flush=True)
        batch += 1
    took = time.monotonic() - start
    print(f"fuzz: seed {seed}: {totals['trials']} trials ({totals['valid']} valid pairs, "
          f"{totals['bad']} bad inputs) in {batch} batches, {took:.0f} s: {totals['wrong']} wrong, "
          f"{totals['crashes']} crashes, {totals['hangs']} hangs", flush=True)
    return 0 if totals["wrong"] == totals["crashes"] == totals["hangs"] == 0 else 1


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        child(int(argv[1]), int(argv[2]), int(argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="time budget (default 120)")
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh one, printed")
    ap.add_argument("--count", type=int, default=300, help="cases a batch (default 300)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a batch may take")
    ap.add_argument("--batch", type=int, default=None, help="with --case: run one case here")
    ap.add_argument("--case", type=int, default=None)
    a = ap.parse_args(argv)
    if (a.batch is None) != (a.case is None):
        ap.error("--batch and --case go together")
    if a.batch is not None:
        if a.seed is None:
            ap.error("--case needs the run's --seed")
        rng = case_rng(a.seed, a.batch, a.case)
        if rng.random() < BAD_INPUT_SHARE:
            print("bad input:", bad_input(rng)[0])
        else:
            print("case:", layout_case(RngPick(rng)))
        try:
            kind, fails = run_case(a.seed, a.batch, a.case)
        except Exception:
            traceback.print_exc()
            return 1
        print(kind, "\n".join(fails) or "ok")
        return 1 if fails else 0
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    return run(a.seconds, seed, a.count, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
