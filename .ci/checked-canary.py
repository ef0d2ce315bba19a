"""The checked build must trap an out-of-bounds write in the kernels, or a clean run of the
tests under it proves nothing. Each case prepares a real plan, then hands its kernel a
destination one element too short, in a child process, once per SIMD path of the move
kernels that this CPU has.

GCC's AddressSanitizer instruments ordinary loads and stores, including 256- and 512-bit
vector stores, but not AVX-512 masked stores or non-temporal stores (compiler builtins).
So each case must die with AddressSanitizer's WRITE report on the AVX2 and portable paths.
On the AVX-512 path, which writes its ragged edges with masked stores, the destination is
followed by guard bytes instead, and the case must change them: the guard bands of
tests/test_reorder_table.py are what catch such a write in the test run. Run by
.ci/checked-build inside the instrumented environment."""
import subprocess
import sys

CASE = """
import numpy as np
import reorder as ro
from reorder import _kernels
src_dims, stag, dtag, sdt, ddt = {args!r}
path = {path!r}
_kernels.set_simd(path)
src = ro.Desc(src_dims, sdt, stag)
dst = ro.Desc(src_dims, ddt, dtag)
p = ro.plan(src, dst)
assert len(p.runners) == 1, p.explain()
x = np.ones(src.nbytes, np.uint8)
n = dst.nbytes - dst.dtype.itemsize                         # one element too short
if path == "avx512":                                        # then 64 guard bytes
    buf = np.full(n + 64, 0xA5, np.uint8)
    p.runners[0].run(x.ctypes.data, buf.ctypes.data, 1)
    if (buf[n:] != 0xA5).any():
        print("GUARD CHANGED")
else:
    short = np.empty(n, np.uint8)
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


def _paths():
    out = subprocess.run([sys.executable, "-c", "from reorder import _kernels; "
                          "print(*_kernels.simd_paths())"], capture_output=True, text=True,
                         check=True).stdout.split()
    return [*out, False]


def main():
    failed = []
    for path in _paths():
        for args in CASES:
            r = subprocess.run([sys.executable, "-c", CASE.format(args=args, path=path)],
                               capture_output=True, text=True, timeout=120)
            # A wide store that straddles the end (a 32-byte vector store, say) is reported
            # as "unknown-crash" rather than "heap-buffer-overflow"; both are a WRITE report.
            kind = "AddressSanitizer: heap-buffer-overflow" in r.stderr \
                or "AddressSanitizer: unknown-crash" in r.stderr
            asan = r.returncode != 0 and kind and "WRITE of size" in r.stderr
            guard = r.returncode == 0 and "GUARD CHANGED" in r.stdout
            caught = guard if path == "avx512" else asan
            how = "guard bytes changed" if guard else "trapped" if asan else "NOT CAUGHT"
            print(f"checked-canary: {path or 'portable'} {args}: {how}")
            if not caught:
                failed.append((path, args, r.returncode, r.stdout[-500:], r.stderr[-2000:]))
    for f in failed:
        print(*f, sep="\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
