"""The checked build must trap an out-of-bounds write in the kernels, or a clean run of the
tests under it proves nothing. Each case prepares a real plan, then hands its kernel a
destination one element too short, in a child process that must die with AddressSanitizer's
report. Run by .ci/checked-build inside the instrumented environment."""
import subprocess
import sys

CASE = """
import numpy as np
import reorder as ro
src_dims, stag, dtag, sdt, ddt = {args!r}
src = ro.Desc(src_dims, sdt, stag)
dst = ro.Desc(src_dims, ddt, dtag)
p = ro.plan(src, dst)
assert len(p.runners) == 1, p.explain()
x = np.ones(src.nbytes, np.uint8)
short = np.empty(dst.nbytes - dst.dtype.itemsize, np.uint8)      # one element too short
p.runners[0].run(x.ctypes.data, short.ctypes.data, 1)
print("kernel wrote past its buffer and nothing stopped it:", type(p.runners[0]).__name__)
"""

CASES = [
    ((1000,), "a", "a", "f32", "f32"),                      # copy (memcpy)
    ((9, 9), "ab", "AB4b2a", "f64", "f64"),                 # generic walk, padding zeroed
    ((3, 37, 5), "abc", "cab", "s8", "s8"),                 # 1-byte transpose
    ((2, 32, 9, 7), "abcd", "aBcd16b", "f32", "f32"),       # transpose tiles
    ((2, 32, 9, 7), "abcd", "aBcd16b", "f32", "bf16"),      # conversion tiles
]


def main():
    failed = []
    for args in CASES:
        r = subprocess.run([sys.executable, "-c", CASE.format(args=args)], capture_output=True,
                           text=True, timeout=120)
        # A wide store that straddles the end (a 32-byte vector store, say) is reported as
        # "unknown-crash" rather than "heap-buffer-overflow"; both are a WRITE report.
        kind = "AddressSanitizer: heap-buffer-overflow" in r.stderr \
            or "AddressSanitizer: unknown-crash" in r.stderr
        overflow = kind and "WRITE of size" in r.stderr
        caught = r.returncode != 0 and overflow
        print(f"checked-canary: {args}: {'trapped' if caught else 'NOT TRAPPED'}")
        if not caught:
            failed.append((args, r.returncode, r.stdout[-500:], r.stderr[-2000:]))
    for f in failed:
        print(*f, sep="\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
