"""Random valid layout pairs and the check of one against the independent reference, shared by
the property tests (tests/test_properties.py, through hypothesis) and the fuzz target
(tests/fuzz_layouts.py, through a seeded numpy generator).

A case is drawn through a `pick`, an object with integers(lo, hi) (both ends included),
sampled(seq), permutation(n) and boolean(): `DrawPick` wraps hypothesis' `draw`, so failures
shrink; `RngPick` wraps a numpy Generator, so a fuzz seed names its cases. Only abstract tags
are made (the reference understands nothing else), in families that aim at each kernel and at
the padding each must write:

  random       any permutation, 0-3 inner blocks of any size on any dim, 1-6 dims
  weights      two dims blocked together (16i16o, 4i16o4i, 8i16o2i, 8i8o, ...), 4-6 dims, small
               spatial dims, sometimes a third dim blocked and padded outside the pair
  outer-pad    weights blocked in two dims against a layout padded in a third dim outside the
               pair's innermost block (dfeABc3a32b2a -> bEfAdc7e2a): whole blocks of padding
  activations  a 16-channel block, small planes, 1- and 2-byte elements mostly, sometimes the
               batch blocked too (a size-1 dim padded to 64 or 1024)
  interleave   pixels of 2-15 channels <-> planes
  multilevel   one dim blocked at two or three levels
  copy         the same layout on both sides (the copy kernel)

Nothing here imports the package's layout code: the expected bytes come from
reorder/testing/reference.py alone.
"""
import math

import numpy as np

from reorder.testing.reference import blocking, ref_physical_shape, ref_reorder, uint_view

LETTERS = "abcdefghijkl"
MAX_ELEMS = 1 << 16             # padded elements per layout: keeps each case fast
DTYPES = ["int8", "uint8", "float16", "int16", "float32", "int32", "float64", "int64"]
FAMILIES = ["random", "weights", "outer-pad", "activations", "interleave", "multilevel", "copy"]
BLOCK_SIZES = [2, 3, 4, 5, 7, 8, 16, 32, 64]
DIM_SIZES = [0, 1, 1, 2, 3, 5, 7, 13, 16, 17, 33]
# two dims X, Y blocked together, outermost block first (oneDNN's weight formats and kin)
PAIR_BLOCKS = [[(16, "Y"), (16, "X")], [(4, "Y"), (16, "X"), (4, "Y")],
               [(8, "Y"), (16, "X"), (2, "Y")], [(8, "X"), (8, "Y")], [(16, "X"), (16, "Y")],
               [(4, "X"), (4, "Y")], [(2, "Y"), (8, "X"), (4, "Y")], [(4, "Y"), (32, "X"), (4, "Y")],
               [(16, "Y"), (32, "X"), (2, "Y")]]
MULTI_LEVELS = [[64, 16], [4, 16, 4], [2, 8, 4], [16, 4], [8, 2], [3, 2], [32, 2]]


class RngPick:
    """A pick over a numpy Generator."""

    def __init__(self, rng):
        self.rng = rng

    def integers(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def sampled(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def permutation(self, n):
        return [int(v) for v in self.rng.permutation(n)]

    def boolean(self):
        return bool(self.rng.integers(0, 2))


class DrawPick:
    """A pick over hypothesis' `draw` (strategies imported here, so the fuzz target needs no
    hypothesis)."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.st = draw, st

    def integers(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def sampled(self, seq):
        return self.draw(self.st.sampled_from(seq))

    def permutation(self, n):
        return list(self.draw(self.st.permutations(range(n))))

    def boolean(self):
        return self.draw(self.st.booleans())


def spell(order, blocks):
    """The abstract tag of outer dims `order` (memory order) and inner `blocks` [(size, dim)],
    outermost first; size-1 blocks are left out, and a dim is upper case where it is blocked."""
    blocks = [(s, d) for s, d in blocks if s > 1]
    blocked = {d for _, d in blocks}
    return "".join(LETTERS[d].upper() if d in blocked else LETTERS[d] for d in order) + \
        "".join(f"{s}{LETTERS[d]}" for s, d in blocks)


def random_tag(pick, ndims, max_blocks=3):
    """Any permutation, 0-max_blocks inner blocks of any size on any dim, repeats allowed."""
    order = pick.permutation(ndims)
    blocks = [(pick.sampled(BLOCK_SIZES), pick.integers(0, ndims - 1))
              for _ in range(pick.integers(0, max_blocks))]
    return spell(order, blocks)


def plain_tag(pick, ndims):
    return spell(pick.permutation(ndims), [])


def _pair_tag(pick, ndims, x, y, extra, first=None, blocks=None):
    """X and Y blocked together (`blocks`, else drawn), `extra` (size, dim) blocked beside them,
    `first` the outermost dim if given."""
    if blocks is None:
        blocks = [(s, x if v == "X" else y) for s, v in pick.sampled(PAIR_BLOCKS)]
    if extra is not None:                   # a third dim, padded outside the pair's block
        blocks.insert(0 if pick.boolean() else len(blocks), extra)
    order = pick.permutation(ndims)
    if first is not None:
        order = [first] + [d for d in order if d != first]
    return spell(order, blocks)


def _family_tags(pick, family):
    """(ndims, src tag, dst tag, dims hints {dim: size}) of one family, before the direction."""
    if family == "random":
        ndims = pick.integers(1, 6)
        return ndims, random_tag(pick, ndims), random_tag(pick, ndims), {}
    if family == "weights":
        ndims = pick.integers(4, 6)
        g = ndims - 4 if ndims == 6 or pick.boolean() else 0       # a leading group dim
        x, y = g, g + 1                     # O, I (the pair may sit on other dims too)
        if pick.integers(0, 3) == 0:
            x, y = pick.sampled([(x, y), (y, x), (0, ndims - 1), (ndims - 2, 1)])
        extra = None
        if pick.boolean():
            z = pick.sampled([d for d in range(ndims) if d not in (x, y)])
            extra = (pick.sampled([2, 3, 7, 16]), z)
        hints = {d: pick.sampled([1, 2, 3]) for d in range(ndims) if d not in (x, y)}
        hints[x], hints[y] = pick.sampled([2, 3, 5, 16, 17, 30, 33]), pick.sampled([1, 3, 13, 16, 17, 33])
        kind = pick.integers(0, 2)          # the other side: plain, padded outside the pair, paired
        if kind == 1:
            z = pick.sampled([d for d in range(ndims) if d not in (x, y)])
            # z's block outside the pair's innermost block (dfeABc3a32b2a -> bEfAdc7e2a): the
            # block kernel's plain side is then padded outside its blocks
            pair = [(s, x if v == "X" else y) for s, v in pick.sampled(PAIR_BLOCKS)]
            tail = pair[-1:] if pick.integers(0, 2) else []
            other = spell(pick.permutation(ndims), [(pick.sampled([2, 3, 7, 16]), z)] + tail)
            blocked = _pair_tag(pick, ndims, x, y, extra, z if pick.boolean() else None, pair)
        else:
            blocked = _pair_tag(pick, ndims, x, y, extra)
            other = plain_tag(pick, ndims) if kind == 0 else _pair_tag(pick, ndims, x, y, None)
        return ndims, other, blocked, hints
    if family == "outer-pad":
        ndims = pick.integers(3, 6)
        x, y, z = pick.permutation(ndims)[:3]
        pair = [(s, x if v == "X" else y) for s, v in pick.sampled(PAIR_BLOCKS)]
        blocked = _pair_tag(pick, ndims, x, y, None, z if pick.boolean() else None, pair)
        padded = spell(pick.permutation(ndims), [(pick.sampled([2, 3, 7, 16]), z)] + pair[-1:])
        hints = {d: pick.sampled([1, 2]) for d in range(ndims)}
        hints[x], hints[y], hints[z] = pick.sampled([2, 16, 17, 33]), pick.sampled([3, 16, 17]), \
            pick.sampled([1, 2, 5])
        return ndims, blocked, padded, hints
    if family == "activations":
        ndims = pick.integers(3, 5)
        blocks = [(16, 1)]
        if pick.boolean():                  # the batch blocked too: size 1 padded to 64, 1024
            blocks = [(s, 0) for s in pick.sampled([[64], [64, 16], [16], [4]])] + blocks
            if pick.boolean():
                blocks = blocks[::-1]
        if pick.integers(0, 3) == 0:        # and a spatial dim, e.g. the 3d of ADbc16a3d
            blocks.append((pick.sampled([2, 3]), ndims - 1))
        hints = {0: pick.sampled([1, 1, 2, 3]), 1: pick.sampled([1, 3, 16, 17, 30, 32])}
        for d in range(2, ndims):
            hints[d] = pick.sampled([1, 2, 3, 4, 7, 8, 16])
        return ndims, plain_tag(pick, ndims), spell(pick.permutation(ndims), blocks), hints
    if family == "interleave":
        ndims = pick.integers(2, 4)
        c = pick.integers(0, ndims - 2)     # the channel dim, beside one pixel dim or more
        pix = [d for d in range(ndims) if d != c]
        interleaved = spell(pix + [c], [])            # channels fastest (nhwc)
        planar = spell(pix[:1] + [c] + pix[1:] if len(pix) > 1 else [c] + pix, [])   # nchw
        hints = {c: pick.integers(2, 15)}
        for d in pix:
            hints[d] = pick.sampled([1, 2, 7, 33, 64, 100, 257])
        return ndims, interleaved, planar, hints
    if family == "multilevel":
        ndims = pick.integers(1, 5)
        d = pick.integers(0, ndims - 1)
        blocks = [(s, d) for s in pick.sampled(MULTI_LEVELS)]
        if ndims > 1 and pick.boolean():
            blocks.insert(pick.integers(0, len(blocks)),
                          (pick.sampled(BLOCK_SIZES), pick.sampled([e for e in range(ndims) if e != d])))
        hints = {d: pick.sampled([1, 2, 3, 17, 33, 65])}
        other = random_tag(pick, ndims, 2) if pick.boolean() else plain_tag(pick, ndims)
        return ndims, other, spell(pick.permutation(ndims), blocks), hints
    assert family == "copy", family
    ndims = pick.integers(1, 5)
    tag = random_tag(pick, ndims, 2)
    return ndims, tag, tag, {}


def padded_elems(dims, tag):
    return math.prod(blocking(dims, tag)["padded_dims"])


def fit(dims, tags, limit=MAX_ELEMS):
    """Halve the largest dims until every layout holds at most `limit` padded elements (the
    blocks, and so the padding, stay as drawn)."""
    dims = list(dims)
    while max(padded_elems(dims, t) for t in tags) > limit:
        d = max((k for k in range(len(dims)) if dims[k] > 1), key=lambda k: dims[k], default=None)
        if d is None:
            break
        dims[d] //= 2
    return tuple(dims)


def layout_case(pick, families=FAMILIES):
    """One valid (dims, src tag, dst tag, dtype) with how to present it: the source view kind,
    out= or a fresh result, threads, streamed stores forced or not, the SIMD path."""
    family = pick.sampled(families)
    ndims, stag, dtag, hints = _family_tags(pick, family)
    if pick.boolean():
        stag, dtag = dtag, stag
    dims = tuple(hints[d] if d in hints and pick.integers(0, 4) else pick.sampled(DIM_SIZES)
                 for d in range(ndims))
    dims = fit(dims, (stag, dtag))
    small = family == "activations" and pick.integers(0, 3)
    dtype = pick.sampled(DTYPES[:4] if small else DTYPES)
    return {"family": family, "dims": dims, "stag": stag, "dtag": dtag, "dtype": dtype,
            "threads": pick.sampled([1, 2]), "out": pick.boolean(), "view": pick.integers(0, 3),
            "stream": pick.integers(0, 3) == 0, "simd": pick.sampled(["best", "avx2", "portable"]),
            "seed": pick.integers(0, 2**32 - 1)}


# ---- presenting a case and checking it ------------------------------------------------------

def random_bits(shape, dtype, rng):
    n = math.prod(shape)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def plain_view(phys_shape, dtype, rng, kind):
    """An array of `phys_shape`: C-contiguous (kind 0), every axis stepped by 2 (1), every axis
    reversed (2), or at an offset with odd strides (3)."""
    if kind == 0:
        return random_bits(phys_shape, dtype, rng)
    if kind == 1:
        base = random_bits(tuple(2 * v for v in phys_shape), dtype, rng)
        return base[tuple(slice(None, None, 2) for _ in phys_shape)]
    if kind == 2:
        return random_bits(phys_shape, dtype, rng)[tuple(slice(None, None, -1) for _ in phys_shape)]
    base = random_bits(tuple(v + 1 for v in phys_shape), dtype, rng)
    return base[tuple(slice(1, None) for _ in phys_shape)]


def blocked_source(dims, stag, dtype, rng, kind):
    """The physical array of `stag`, random bits everywhere, padding too (only the logical
    region may be read): fresh (kind 0), a flat buffer (1), or views at an element offset (2, 3)."""
    shape = ref_physical_shape(dims, stag)
    n = math.prod(shape)
    if kind in (2, 3):
        return random_bits((n + kind,), dtype, rng)[kind:].reshape(shape)
    x = random_bits(shape, dtype, rng)
    return x.reshape(-1) if kind == 1 else x


GUARD = 64                      # poisoned bytes either side of an out= buffer


def source_of(case, rng):
    """(x, keyword arguments) presenting the case's source."""
    dims, stag, dtype = case["dims"], case["stag"], np.dtype(case["dtype"])
    if blocking(dims, stag)["inner_blks"]:
        return blocked_source(dims, stag, dtype, rng, case["view"]), {"dims": dims}
    x = plain_view(tuple(dims[d] for d in blocking(dims, stag)["order"]), dtype, rng, case["view"])
    return x, ({"dims": dims} if case["view"] % 2 else {})


def poisoned_out(shape, dtype, rng):
    """(out, whole): out of `shape` inside `whole`, every byte of both a non-zero pattern, so an
    element left unwritten, or one written outside out, shows."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    whole = rng.integers(1, 256, size=nbytes + 2 * GUARD, dtype=np.uint8)
    return whole[GUARD:GUARD + nbytes].view(dtype).reshape(shape), whole


def check_case(ro, case, plan_paths=None):
    """Run one case through reorder() into a poisoned out= (and a fresh result unless the case
    says out=) and compare with the reference bit for bit, guard bytes around out= included. Returns a list of failure strings (empty: the case holds).
    `plan_paths(plan)`, if given, is called with the plan that ran."""
    from reorder import _kernels
    from reorder.plan.cache import cached_plan
    rng = np.random.default_rng(case["seed"])
    dims, stag, dtag, dtype = case["dims"], case["stag"], case["dtag"], np.dtype(case["dtype"])
    if case["stream"] and case["view"] and not blocking(dims, stag)["inner_blks"]:
        case = dict(case, view=0)       # a plan of tag Descs takes the tag's own strides
    x, kw = source_of(case, rng)
    before = np.array(x, copy=True)
    expected = ref_reorder(np.ascontiguousarray(x).reshape(-1), dims, stag, dtag) \
        .reshape(ref_physical_shape(dims, dtag))
    sd, dd = ro.Desc(dims, dtype.name, stag), ro.Desc(dims, dtype.name, dtag)
    plan = cached_plan(sd, dd, stream_min_bytes=0) if case["stream"] else ro.plan(sd, dd)
    if plan_paths is not None:
        plan_paths(plan)
    fails = []
    simd = {"best": True, "avx2": "avx2", "portable": False}[case["simd"]]
    if simd == "avx2" and "avx2" not in _kernels.simd_paths():
        simd = True
    _kernels.set_simd(simd)
    results = {}
    try:
        # always into a poisoned out= (padding left unwritten shows), and into a fresh result
        # too unless the case asks for out= only
        out, whole = poisoned_out(expected.shape, dtype, rng)
        guard = whole.copy()
        results["out="] = plan(x, out=out, threads=case["threads"]) if case["stream"] else \
            ro.reorder(x, stag, dtag, out=out, threads=case["threads"], **kw)
        if results["out="] is not out:
            fails.append("out= was not returned")
        if not (np.array_equal(whole[:GUARD], guard[:GUARD])
                and np.array_equal(whole[-GUARD:], guard[-GUARD:])):
            fails.append("bytes written outside out=")
        if not case["out"]:
            results["fresh"] = plan(x, threads=case["threads"]) if case["stream"] else \
                ro.reorder(x, stag, dtag, threads=case["threads"], **kw)
    finally:
        _kernels.set_simd(True)
    for how, got in results.items():
        if got.shape != expected.shape or got.dtype != dtype:
            fails.append(f"{how}: result {got.shape} {got.dtype}, expected {expected.shape} {dtype}")
            continue
        wrong = uint_view(got) != uint_view(expected)
        if wrong.any():
            fails.append(f"{how}: {int(wrong.sum())} of {wrong.size} elements wrong; {plan!r}")
    if not np.array_equal(uint_view(x), uint_view(before)):
        fails.append("the source was modified")
    return fails


def plan_labels(plan):
    """The kernel paths a plan takes, one label a step: the kernel, for the block kernel how a
    block moves (tiles, runs, registers) and which way, '+pad' where the destination has
    padding, and '+nt' where it streams."""
    labels = []
    for step, runner in zip(plan.steps, plan.runners):
        name = step.kernel.name
        if name == "blocks":
            how = "runs" if runner.runs else "regs" if runner.in_registers else "tiles"
            name += f"/{how}/{'to-blocked' if runner.to_blocked else 'to-plain'}"
        pad = "+pad" if step.kernel.name != "copy" and plan.dst.padded_dims != plan.dst.dims else ""
        labels.append(name + pad + ("+nt" if runner.nt else ""))
    return labels
