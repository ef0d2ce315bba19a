"""Property tests: random layout pairs against the independent reference (reorder/testing/reference.py),
bit for bit, padding included.

The pairs come from tests/layout_cases.py (shared with the fuzz target): random abstract tags
(any permutation, 0-3 inner blocks of sizes 2-64, a dim blocked more than once, 1-6 dims) and
families aimed at each kernel path — weights blocked in two dims, against a layout padded in a
third dim outside their blocks, activations in 16-channel blocks with a size-1 batch padded to
64 or 1024, pixels against planes, dims blocked at two and three levels, identical layouts.
Dims include 0 and 1; every element size; plain sources seen through strided, negative-stride
and offset views, blocked sources as arrays, flat buffers and offset views; every result goes
into an out= poisoned with non-zero bytes (inside guard bytes that must stay as they were) and
most also into a fresh result; 1 and 2 threads, streaming stores forced, the AVX2 and portable
paths beside the best. Random bytes fill the source, so NaN payloads and every bit pattern must
survive. The runs are derandomized and bounded (MAX_EXAMPLES) so the suite's time stays
predictable; test_every_kernel_path_is_reached asserts that the same generator reaches every
kernel path this CPU has.
"""
import collections

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reorder as ro
from reorder import _kernels
from reorder.plan.cache import cached_plan

from layout_cases import (DTYPES, FAMILIES, LETTERS, MAX_ELEMS, DrawPick, RngPick, check_case,
                          fit, layout_case, plan_labels, random_bits, random_tag)
from reorder.testing.reference import blocking, ref_physical_shape, ref_reorder, uint_view

pytestmark = pytest.mark.slow        # Hypothesis searches of thousands of examples

MAX_EXAMPLES = 1500                 # about 15 s on one core of the CI machine type
SETTINGS = dict(deadline=None, derandomize=True, print_blob=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def cases(draw, families=tuple(FAMILIES)):
    return layout_case(DrawPick(draw), list(families))


@st.composite
def tags(draw, ndims, max_blocks=3):
    return random_tag(DrawPick(draw), ndims, max_blocks)


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(cases())
def test_random_layouts_match_reference(case):
    fails = check_case(ro, case)
    assert not fails, (case, fails)


@settings(max_examples=MAX_EXAMPLES // 3, **SETTINGS)
@given(cases(("weights", "outer-pad", "activations", "multilevel")))
def test_padded_layouts_match_reference(case):
    """The families that pad: more of them, each with a poisoned out= (check_case)."""
    fails = check_case(ro, case)
    assert not fails, (case, fails)


@settings(max_examples=MAX_EXAMPLES // 3, **SETTINGS)
@given(st.data())
def test_random_plan_round_trip(data):
    """A plan built from two Descs, run with out=, and its inverse, give the reference's bytes
    and bring the logical values back."""
    ndims = data.draw(st.integers(1, 6))
    dims = tuple(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 6, 17, 31]), min_size=ndims,
                                    max_size=ndims)))
    plain = LETTERS[:ndims]
    tag = data.draw(tags(ndims))
    dims = fit(dims, (tag,), MAX_ELEMS)
    dtype = np.dtype(data.draw(st.sampled_from(DTYPES)))
    threads = data.draw(st.sampled_from([1, 2]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    x = random_bits(dims, dtype, rng)
    name = dtype.name
    fwd = ro.plan(ro.Desc(dims, name, plain), ro.Desc(dims, name, tag))
    assert fwd.dst.physical_shape == ref_physical_shape(dims, tag)
    y = fwd.empty()
    y.view(np.uint8)[...] = 0xA5
    fwd(x, out=y, threads=threads)
    exp = ref_reorder(x.reshape(-1), dims, plain, tag).reshape(ref_physical_shape(dims, tag))
    assert np.array_equal(uint_view(y), uint_view(exp)), fwd.explain()
    back = ro.plan(ro.Desc(dims, name, tag), ro.Desc(dims, name, plain))
    z = back.empty()
    back(y, out=z, threads=threads)
    assert z.shape == x.shape and np.array_equal(uint_view(z), uint_view(x)), back.explain()


def expected_paths():
    """The kernel paths (layout_cases.plan_labels, without '+pad' and '+nt') the generator must
    reach on this CPU: the block kernel's activation planes and the interleave kernel are
    planned only where the CPU has their AVX-512 paths."""
    paths = {"copy", "generic", "transpose", "blocks/tiles/to-blocked", "blocks/tiles/to-plain",
             "blocks/runs/to-blocked", "blocks/runs/to-plain", "blocks/regs/to-blocked",
             "blocks/regs/to-plain"}
    if _kernels.interleave_paths(1):
        paths.add("interleave")
    return paths


def sample_labels(n, seed=0):
    """Kernel path label -> how many of n generated cases plan it (labels as plan_labels)."""
    seen = collections.Counter()
    for i in range(n):
        case = layout_case(RngPick(np.random.default_rng([seed, i])))
        sd = ro.Desc(case["dims"], case["dtype"], case["stag"])
        dd = ro.Desc(case["dims"], case["dtype"], case["dtag"])
        p = cached_plan(sd, dd, stream_min_bytes=0) if case["stream"] else ro.plan(sd, dd)
        seen.update(plan_labels(p))
    return seen


def test_every_kernel_path_is_reached():
    """The generator reaches every kernel path, with the destination padded and streamed too:
    a path it never plans is a path the property tests never check. (The paths are counted
    on the generator's own output, numbered cases as the fuzz target draws them.)"""
    seen = sample_labels(2000)
    base = collections.Counter()
    for label, n in seen.items():
        base[label.replace("+pad", "").replace("+nt", "")] += n
    missing = {p for p in expected_paths() if base[p] < 5}
    assert not missing, (missing, dict(seen))
    # padding written by each kernel that writes it, and streamed stores on each kernel
    for kernel in ("generic", "transpose", "blocks/tiles/to-blocked", "blocks/tiles/to-plain",
                   "blocks/runs/to-blocked", "blocks/regs/to-blocked"):
        assert seen[kernel + "+pad"] + seen[kernel + "+pad+nt"] >= 5, (kernel, dict(seen))
    for kernel in ("copy", "generic", "transpose", "blocks/tiles/to-blocked", "blocks/tiles/to-plain"):
        assert sum(n for lb, n in seen.items() if lb.startswith(kernel) and lb.endswith("+nt")) >= 3, \
            (kernel, dict(seen))


def test_generator_reaches_the_awkward_cases():
    """The generator produces what the module docstring promises (checked on its own output):
    repeated and three-level blocks, 5- and 6-D tags, a size-1 dim padded to 64 or more, a
    padded dim that is neither of a block pair's dims, zero-size dims."""
    seen = collections.Counter()
    for i in range(2000):
        c = layout_case(RngPick(np.random.default_rng([1, i])))
        for tag in (c["stag"], c["dtag"]):
            b = blocking(c["dims"], tag)
            idx = b["inner_idxs"]
            seen["repeat"] += len(set(idx)) < len(idx)
            seen["three levels"] += any(idx.count(d) >= 3 for d in idx)
            seen["5-D"] += b["ndims"] == 5
            seen["6-D"] += b["ndims"] == 6
            seen["size 1 padded to 64+"] += any(c["dims"][d] == 1 and b["padded_dims"][d] >= 64
                                               for d in range(b["ndims"]))
            blocked = [d for d in set(idx) if idx.count(d)]
            seen["padded beside a pair"] += len(blocked) >= 3 and any(
                b["padded_dims"][d] > c["dims"][d] for d in blocked)
        seen["zero-size"] += 0 in c["dims"]
    assert all(seen[k] >= 10 for k in ("repeat", "three levels", "5-D", "6-D",
                                       "size 1 padded to 64+", "padded beside a pair",
                                       "zero-size")), dict(seen)


def test_generator_finds_unwritten_padding():
    """check_case can fail: a result whose padding holds the poison is reported (the kernel
    replaced by one that copies only the valid elements into the poisoned out=)."""
    case = {"family": "outer-pad", "dims": (2, 2, 33, 16, 2, 2), "stag": "dfeABc3a32b2a",
            "dtag": "bEfAdc7e2a", "dtype": "float32", "threads": 1, "out": True, "view": 0,
            "stream": False, "simd": "best", "seed": 3}

    class ValidOnly:
        """reorder() as a kernel that skips padding would be."""
        Desc, plan = ro.Desc, staticmethod(ro.plan)

        @staticmethod
        def reorder(x, src, dst, out=None, threads=None, dims=None):
            good = ro.reorder(x, src, dst, threads=threads, dims=dims)
            mask = ro.reorder(np.ones(x.shape, x.dtype), src, dst, dims=dims) != 0
            out[mask] = good[mask]
            return out

    assert not check_case(ro, case)
    fails = check_case(ValidOnly, case)
    assert fails and "elements wrong" in fails[0], fails
