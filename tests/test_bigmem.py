"""More than 2**31 elements (and a destination past 2**32 bytes): int8 nchw -> nChw16c with
C = 17 (padded to 32) and back, checked at sampled positions by direct index arithmetic.
Needs about 7 GB at its peak; marked bigmem (tests/conftest.py says when it runs)."""
import numpy as np
import pytest

import reorder as ro

N, C, H, W = 1, 17, 8192, 16385          # 2,281,840,640 elements in; 4,295,229,440 bytes out
pytestmark = pytest.mark.slow        # gigabytes moved both ways

NEED_BYTES = 10 << 30


def available_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def value(c, h, w):
    """The byte stored at logical (0, c, h, w): cheap to recompute anywhere."""
    return ((c * 37 + h * 11 + w * 3 + 1) % 256).astype(np.uint8)


def fill():
    x = np.empty((N, C, H, W), np.uint8)
    w3 = value(np.int64(0), np.int64(0), np.arange(W, dtype=np.int64)) - np.uint8(1)   # (3w) % 256
    for c in range(C):
        for h0 in range(0, H, 1024):
            h = np.arange(h0, min(h0 + 1024, H), dtype=np.int64)
            base = value(np.int64(c), h, np.int64(0))                  # (37c + 11h + 1) % 256
            np.add(base[:, None], w3[None, :], out=x[0, c, h0:h0 + len(h)])   # wraps mod 256
    return x.view(np.int8)


def sample_indices(rng, n):
    c = rng.integers(0, C, n)
    h = rng.integers(0, H, n)
    w = rng.integers(0, W, n)
    # the corners, and the logical indices on either side of flat element 2**31
    edge = np.array([np.unravel_index(i, (C, H, W)) for i in
                     (0, 2**31 - 1, 2**31, 2**31 + 1, C * H * W - 1)]).T
    return np.concatenate([c, edge[0]]), np.concatenate([h, edge[1]]), np.concatenate([w, edge[2]])


@pytest.mark.bigmem
def test_more_than_2_31_elements_both_ways():
    avail = available_bytes()
    if avail is None or avail < NEED_BYTES:
        pytest.skip(f"needs {NEED_BYTES >> 30} GB available, this machine has "
                    f"{'an unknown amount' if avail is None else f'{avail / 2**30:.1f} GB'}")
    assert N * C * H * W > 2**31 and N * 32 * H * W > 2**32
    rng = np.random.default_rng(0)
    c, h, w = sample_indices(rng, 2_000_000)
    expect = value(c, h, w).view(np.int8)

    x = fill()
    assert np.array_equal(x[0, c, h, w], expect)                      # the fill itself
    y = ro.reorder(x, "nchw", "nChw16c")
    assert y.shape == (N, 2, H, W, 16) and y.dtype == np.int8
    assert np.array_equal(y[0, c // 16, h, w, c % 16], expect)
    # padding (c = 17..31) is zero, including the last bytes, past 2**32
    ph, pw = np.append(h, H - 1), np.append(w, W - 1)
    assert not y[0, 1, ph, pw, 1:].any()
    last = value(np.int64(16), np.int64(H - 1), np.int64(W - 1)).view(np.int8)
    assert y.reshape(-1)[-1] == 0 and y.reshape(-1)[-16] == last

    del x
    z = ro.reorder(y, "nChw16c", "nchw", dims=(N, C, H, W))
    assert z.shape == (N, C, H, W) and z.dtype == np.int8
    assert np.array_equal(z[0, c, h, w], expect)
