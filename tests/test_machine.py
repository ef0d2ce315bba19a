"""The last-level cache size is read once, from sysfs (or sysconf), and sets the default
streaming threshold; REORDER_STREAM_MIN_BYTES overrides it, and a bad value is named."""
import ast
import subprocess
import sys

import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.core import machine
from reorder.front.config import config_dict
from reorder.plan.cache import cached_plan

from reorder.testing.reference import ref_from_plain


def _fake_cache(root, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")


def test_sysfs_gives_the_highest_data_or_unified_level(tmp_path):
    _fake_cache(tmp_path, [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"),
                           (3, "Unified", "32768K")])
    assert machine._sysfs_llc(str(tmp_path)) == (32 << 20, "L3, sysfs")


def test_sysfs_without_caches_is_none(tmp_path):
    _fake_cache(tmp_path, [(1, "Instruction", "32K")])
    assert machine._sysfs_llc(str(tmp_path)) is None
    assert machine._sysfs_llc(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("text,n", [("32768K", 32 << 20), ("2M", 2 << 20), ("512", 512), ("x", None)])
def test_parse_size(text, n):
    assert machine._parse_size(text) == n


def test_threshold_is_half_the_cache_or_the_environment():
    assert machine.stream_min_bytes_for(32 << 20) == 16 << 20
    assert machine.stream_min_bytes_for(30 << 20) == (30 << 20) // 2
    assert machine.stream_min_bytes_for(1 << 20) == 512 << 10
    assert machine.stream_min_bytes_for(0) == machine.FALLBACK_STREAM_MIN_BYTES
    assert machine.stream_min_bytes_for(32 << 20, " 4096 ") == 4096
    assert machine.stream_min_bytes_for(32 << 20, "0") == 0
    assert machine.stream_min_bytes_for(32 << 20, "") == 16 << 20
    for bad in ("-1", "lots", "1.5"):
        with pytest.raises(ro.ReorderError, match="REORDER_STREAM_MIN_BYTES"):
            machine.stream_min_bytes_for(32 << 20, bad)


def test_default_threshold_follows_the_detected_cache():
    code = ("import reorder.core.machine as m\n"
            "print(m.LLC_BYTES, m.STREAM_MIN_BYTES, repr(m.CPU_VENDOR), m.STREAM_MIN_SOURCE)")
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split(maxsplit=3)
    llc, threshold, source = int(out[0]), int(out[1]), out[3].strip()
    vendor = ast.literal_eval(out[2])
    if vendor == "GenuineIntel":
        assert threshold == machine.NEVER_STREAM and source.startswith("Intel CPU")
    elif llc:
        assert threshold == llc // 2 and source == "1/2 of the last-level cache"
    else:
        assert threshold == machine.FALLBACK_STREAM_MIN_BYTES and source == "fallback"


def test_plans_default_to_the_detected_threshold():
    p = cached_plan(ro.Desc((4, 32, 8, 8), "f32", "nchw"), ro.Desc((4, 32, 8, 8), "f32", "nChw16c"))
    assert p.stream_min_bytes == machine.STREAM_MIN_BYTES
    text = config_dict()["streaming stores"]
    if machine.STREAM_MIN_BYTES >= machine.NEVER_STREAM:
        assert text.startswith("never (") and machine.STREAM_MIN_SOURCE in text
    else:
        assert str(machine.STREAM_MIN_BYTES) in text


def test_vendor_is_read_from_cpuinfo(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n")
    assert machine.detect_vendor(str(f)) == "GenuineIntel"
    f.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n")
    assert machine.detect_vendor(str(f)) == "AuthenticAMD"
    f.write_text("processor\t: 0\n")
    assert machine.detect_vendor(str(f)) == ""
    assert machine.detect_vendor(str(tmp_path / "missing")) == ""


def test_intel_keeps_stores_cached_unless_the_environment_says_otherwise():
    """On Intel CPUs cached stores measured as fast or faster at every size (docs/kernels/index.md):
    the default streams nothing, even far past the cache; the environment still sets it."""
    intel = machine.stream_min_bytes_for(32 << 20, vendor="GenuineIntel")
    assert intel == machine.NEVER_STREAM
    assert machine.stream_min_bytes_for(32 << 20, "4096", "GenuineIntel") == 4096
    assert machine.stream_min_bytes_for(32 << 20, vendor="AuthenticAMD") == 16 << 20
    assert machine.stream_min_source(32 << 20, None, "GenuineIntel").startswith("Intel CPU")
    source = machine.stream_min_source
    assert source(32 << 20, "4096", "GenuineIntel") == "$REORDER_STREAM_MIN_BYTES"
    assert source(32 << 20, None, "AuthenticAMD") == "1/2 of the last-level cache"
    # 2 x 1.6 GB moved, a padded destination among them: nothing streams, on any thread count
    for src, dst, dims, dtype in (("nchw", "nhwc", (256, 256, 56, 56), "f32"),
                                  ("nchw", "nChw16c", (1024, 3, 224, 224), "bf16"),
                                  ("nhwc", "nchw", (256, 256, 56, 56), "u8")):
        p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                        stream_min_bytes=intel)
        assert [p.streams(n)[0] for n in (1, 2, 3)] == [False] * 3, p.explain()
        assert not p.runners[0].nt and "streaming" not in p.explain()


def test_tile_rules_follow_the_vendor():
    """The tile choices measured faster on a Xeon and slower on a Zen 5 (machine.TileRules)
    are on for Intel CPUs alone; TILE_RULES is this CPU's."""
    assert machine.tile_rules("GenuineIntel") == machine.TileRules(True, True)
    for vendor in ("AuthenticAMD", "HygonGenuine", ""):
        assert machine.tile_rules(vendor) == machine.TileRules(False, False)
    assert machine.TILE_RULES == machine.tile_rules(machine.CPU_VENDOR)


# nhwc -> nchw planes (B: extent = channels, dst stride = pixels) and the far slice of a
# widening into f32, by how many 4 KiB offsets the planes start at: (pixels, offsets, slice
# with the Xeon's rules, with the others')
WIDENED_PLANES = [
    (64 * 64, 1, 16, 16), (96 * 96, 1, 16, 16), (32 * 32, 1, 16, 16),
    (56 * 64, 2, 16, 16),
    (48 * 48, 4, 32, 32), (112 * 112, 4, 32, 32),
    (40 * 80, 8, 32, 0), (56 * 56, 16, 32, 0), (60 * 60, 64, 32, 0), (33 * 33, 1024, 32, 0),
]


@pytest.mark.parametrize("pixels,offsets,xeon,other", WIDENED_PLANES)
def test_widened_far_planes_slice_by_their_offsets(pixels, offsets, xeon, other):
    from reorder.kernels.base import Node, far_plane_slice, plane_offsets
    b = Node(64, 1, pixels, -1, 1)
    assert plane_offsets(b, 4) == offsets
    for ssize in (1, 2):
        assert far_plane_slice(b, ssize, 4, slice_widening_planes=True) == xeon
        assert far_plane_slice(b, ssize, 4, slice_widening_planes=False) == other
    # moves and narrowings keep 128 bytes a slice (f32 32, 16-bit 64) whatever the offsets
    assert far_plane_slice(b, 4, slice_widening_planes=False) == 32
    assert far_plane_slice(b, 4, 2, slice_widening_planes=False) == 64
    assert far_plane_slice(b._replace(extent=32), 1, 4) == 0          # too few planes


def test_environment_sets_the_threshold_at_import():
    code = ("import reorder as ro, reorder.core.machine as m\n"
            "p = ro.plan(ro.Desc((64, 64, 64), 'f32', 'abc'), ro.Desc((64, 64, 64), 'f32', 'cba'))\n"
            "print(m.STREAM_MIN_BYTES, m.STREAM_MIN_SOURCE, p.runners[0].nt)")
    env = {"REORDER_STREAM_MIN_BYTES": "1024", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout.split()
    assert out == ["1024", "$REORDER_STREAM_MIN_BYTES", "True"]
    env["REORDER_STREAM_MIN_BYTES"] = "big"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "REORDER_STREAM_MIN_BYTES" in r.stderr


# On a 32 MiB L3 (Zen 3 and Zen 4, with the next layer's read counted, docs/kernels/index.md):
# up to 15 MB read and written stay cached, from 19 MB on the stores stream.
STREAMED_ON_32_MIB = [
    ("nchw", "nChw16c", (8, 3, 224, 224), "bf16", False),     # 1.2 + 12.8 MB
    ("nchw", "nChw16c", (8, 256, 56, 56), "s8", False),       # 6.4 + 6.4 MB
    ("nchw", "nChw16c", (1, 64, 112, 112), "f32", False),     # 3.2 + 3.2 MB
    ("oihw", "OIhw16i16o", (512, 512, 3, 3), "f32", True),    # 9.4 + 9.4 MB
    ("nchw", "nChw16c", (8, 256, 56, 56), "bf16", True),      # 12.8 + 12.8 MB
    ("nChw16c", "nchw", (8, 256, 56, 56), "f32", True),       # 25.7 + 25.7 MB
]


@pytest.mark.parametrize("src,dst,dims,dtype,streams", STREAMED_ON_32_MIB)
def test_what_streams_on_a_32_mib_cache(src, dst, dims, dtype, streams):
    p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                    stream_min_bytes=machine.stream_min_bytes_for(32 << 20))
    assert [r.nt for r in p.runners] == [streams], p.explain()


@pytest.mark.skipif(not _kernels.OPENMP, reason="serial build: a call runs on 1 thread")
def test_two_threads_stream_from_twice_the_threshold_or_a_destination_of_it():
    """A step streams on one thread from stream_min_bytes moved; on two and more from twice
    that, or from a destination of stream_min_bytes alone (a padded block: 3 channels of
    16); each choice writes the same bytes as the reference."""
    for dims, tag in (((4, 48, 40, 40), "aBcd16b"), ((4, 3, 80, 80), "aBcd16b")):
        src, dst = ro.Desc(dims, "bf16", "nchw"), ro.Desc(dims, "bf16", "nChw16c")
        n_src, n_dst = src.nbytes, dst.nbytes
        moved = n_src + n_dst
        x = np.arange(np.prod(dims), dtype=np.uint16).reshape(dims)
        expected = ref_from_plain(x, "abcd", tag)
        cases = [(moved // 2, (True, True, True)), (moved + 1, (False, False, False))]
        if n_dst < moved // 2 + 1:
            cases.append((moved, (True, False, False)))
        else:   # the padded destination is most of what moves
            cases += [(n_dst, (True, True, True)), (n_dst + 1, (True, False, False))]
        for smb, on in cases:
            p = cached_plan(src, dst, stream_min_bytes=smb)
            assert p.max_threads >= 3, p.explain()
            assert [p.streams(n)[0] for n in (1, 2, 3)] == list(on), (smb, p.explain())
            assert ("cached on more" in p.explain()) == (on == (True, False, False))
            for n in (1, 2, 3):
                out = p(x, threads=n)
                assert np.array_equal(out.view(np.uint16), expected)


# Tiles of 1- and 2-byte elements into 64 or more planes, each 4096 bytes or more apart,
# stream on every thread count from the one-thread threshold; the rest keep the byte rule
# (streamed on 1 thread only, at a threshold of exactly the bytes moved).
FAR_PLANE_TILES = [
    ("acdb", "abcd", (2, 64, 64, 40), "bf16", True),     # 5120-byte planes
    ("acdb", "abcd", (2, 64, 64, 64), "u8", True),       # 4096-byte planes
    ("acdeb", "abcde", (1, 96, 4, 8, 64), "f16", True),  # ndhwc -> ncdhw
    ("acdb", "abcd", (2, 63, 64, 40), "bf16", False),    # 63 planes
    ("acdb", "abcd", (2, 64, 40, 40), "bf16", False),    # 3200-byte planes
    ("acdb", "abcd", (2, 64, 32, 32), "f32", False),     # 4-byte elements
    ("aBcd16b", "abcd", (2, 64, 64, 40), "bf16", False),  # 16 planes a tile
]


@pytest.mark.skipif(not _kernels.OPENMP, reason="serial build: a call runs on 1 thread")
@pytest.mark.parametrize("stag,dtag,dims,dtype,far", FAR_PLANE_TILES)
def test_word_tiles_into_far_planes_stream_on_every_thread_count(stag, dtag, dims, dtype, far):
    src, dst = ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[src.dtype.itemsize]
    plain = np.random.default_rng(sum(dims)).integers(0, 1 << 16, dims).astype(bits)
    plain_tag = "abcde"[:len(dims)]
    x = ref_from_plain(plain, plain_tag, stag)
    expected = ref_from_plain(plain, plain_tag, dtag)
    p = cached_plan(src, dst, stream_min_bytes=src.nbytes + dst.nbytes)
    assert p.kernel == "transpose" and p.max_threads >= 3, p.explain()
    assert [p.streams(n)[0] for n in (1, 2, 3)] == [True, far, far], p.explain()
    assert ("far planes" in p.explain()) == far, p.explain()
    for n in (1, 2, 3):
        out = np.full(expected.shape, 0x5A, bits)
        p(x.view(src.dtype.storage), out=out.view(dst.dtype.storage), threads=n)
        assert np.array_equal(out, expected), (n, p.explain())
