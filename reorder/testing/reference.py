"""The one slow, independent reference of the layout spec: the tests check every kernel
against it, and the demo and `bench` check the fast path with it, bit for bit.

Written from the spec alone (memory descriptor, abstract "abc" tags, off_v; oneDNN's alias
rule, benchdnn's `x` meta-tags, plain TVM strings) with plain numpy integer index
arithmetic. It imports nothing from this package and never reads a `Desc`, so a bug in the
tag parser, the descriptors, the planner or the kernels cannot hide by agreeing with itself.

Two levels:
- abstract tags only (``abcd``, ``aBcd16b``, ``ABcd4b16a4b``, ``BA16a64b4a``, ...): letters
  ``a``..``l`` give the outer dims in memory order (outermost first, upper case = the dim has
  inner blocks), followed by ``<N><letter>`` inner blocks listed outermost first:
  `parse_tag`, `blocking`, `offset`, `offsets_of_all`, `ref_reorder`, ...;
- any spelling (``nchw``, ``OIhw16i16o``, ``aBx16b``, TVM ``NCHW16c``), read through
  `abstract_tag`: `offsets`, `physical_shape`, `from_logical`, `reference_reorder`.
"""
import math

import numpy as np

__all__ = [
    "RefTagError",
    "parse_tag",
    "blocking",
    "ref_padded_dims",
    "ref_strides",
    "ref_nelems",
    "ref_physical_shape",
    "ref_is_plain",
    "offset",
    "offsets_of_all",
    "ref_reorder",
    "ref_matches",
    "ref_from_plain",
    "ref_to_plain",
    "uint_view",
    "abstract_tag",
    "offsets",
    "physical_shape",
    "from_logical",
    "reference_reorder",
]

_LETTERS = "abcdefghijkl"
MAX_NDIMS = 12


class RefTagError(ValueError):
    """A malformed abstract tag (reference parser)."""


def parse_tag(tag):
    """Split an abstract tag into (outer, blocks).

    outer:  list of (dim, is_upper) in memory order, outermost first.
    blocks: list of (size, dim), outermost first (as written).
    """
    if not isinstance(tag, str) or not tag:
        raise RefTagError(f"empty or non-string tag {tag!r}")
    i = 0
    outer = []
    while i < len(tag) and tag[i].isalpha():
        ch = tag[i]
        low = ch.lower()
        if low not in _LETTERS:
            raise RefTagError(f"bad letter {ch!r} in {tag!r}")
        outer.append((_LETTERS.index(low), ch.isupper()))
        i += 1
    blocks = []
    while i < len(tag):
        j = i
        while j < len(tag) and tag[j].isdigit():
            j += 1
        if j == i or j >= len(tag):
            raise RefTagError(f"expected <number><letter> at {i} in {tag!r}")
        ch = tag[j]
        if ch not in _LETTERS:
            raise RefTagError(f"bad block letter {ch!r} in {tag!r}")
        size = int(tag[i:j])
        if size <= 0:
            raise RefTagError(f"block of size {size} in {tag!r}")
        blocks.append((size, _LETTERS.index(ch)))
        i = j + 1
    ndims = len(outer)
    dims_seen = sorted(d for d, _ in outer)
    if dims_seen != list(range(ndims)):
        raise RefTagError(f"outer letters of {tag!r} are not a permutation of a..")
    if ndims > MAX_NDIMS:
        raise RefTagError(f"too many dims in {tag!r}")
    blocked = {d for _, d in blocks}
    for d, upper in outer:
        if upper != (d in blocked):
            raise RefTagError(f"case of letter {_LETTERS[d]!r} disagrees with blocks in {tag!r}")
    for _, d in blocks:
        if d >= ndims:
            raise RefTagError(f"block on a missing dim in {tag!r}")
    return outer, blocks


def blocking(dims, tag):
    """The blocking descriptor of ``tag`` over logical ``dims`` (spec 1.3).

    Returns a dict with ndims, dims, order (outer dims in memory order), inner_blks,
    inner_idxs (outermost first; size-1 blocks dropped), blk (per-dim total block),
    B (product of all blocks), padded_dims and strides (outer strides, in elements).
    """
    outer, blocks = parse_tag(tag)
    dims = tuple(int(v) for v in dims)
    ndims = len(outer)
    if len(dims) != ndims:
        raise RefTagError(f"tag {tag!r} has {ndims} dims, got dims {dims}")
    if any(v < 0 for v in dims):
        raise RefTagError(f"negative dims {dims}")
    inner = [(s, d) for s, d in blocks if s != 1]
    blk = [1] * ndims
    for s, d in inner:
        blk[d] *= s
    B = math.prod(s for s, _ in inner)
    padded = [(-(-dims[d] // blk[d])) * blk[d] for d in range(ndims)]
    strides = [0] * ndims
    stride = B
    for d, _ in reversed(outer):
        strides[d] = stride
        n_outer = padded[d] // blk[d]
        stride *= n_outer if padded[d] != 0 else 1
    return {
        "ndims": ndims,
        "dims": dims,
        "order": [d for d, _ in outer],
        "inner_blks": [s for s, _ in inner],
        "inner_idxs": [d for _, d in inner],
        "blk": blk,
        "B": B,
        "padded_dims": tuple(padded),
        "strides": tuple(strides),
    }


def ref_padded_dims(dims, tag):
    return blocking(dims, tag)["padded_dims"]


def ref_strides(dims, tag):
    return blocking(dims, tag)["strides"]


def ref_nelems(dims, tag):
    """Number of elements including padding (the span of a tag-built descriptor)."""
    return math.prod(blocking(dims, tag)["padded_dims"])


def ref_is_plain(tag):
    return not parse_tag(tag)[1]


def ref_physical_shape(dims, tag):
    """Outer extents in tag order, then the inner blocks in order (size-1 blocks dropped)."""
    b = blocking(dims, tag)
    outer = [b["padded_dims"][d] // b["blk"][d] for d in b["order"]]
    return tuple(outer) + tuple(b["inner_blks"])


def _off(b, idx, offset0=0):
    """off_v of spec 1.4; ``idx`` entries may be ints or integer numpy arrays."""
    p = [np.asarray(v, dtype=np.int64) if not isinstance(v, int) else v for v in idx]
    off = offset0
    bs = 1
    for k in range(len(b["inner_blks"]) - 1, -1, -1):
        d = b["inner_idxs"][k]
        s = b["inner_blks"][k]
        off = off + (p[d] % s) * bs
        p[d] = p[d] // s
        bs *= s
    for d in range(b["ndims"]):
        off = off + p[d] * b["strides"][d]
    return off


def offset(dims, tag, idx, offset0=0):
    """Physical offset (in elements) of logical index ``idx`` in ``tag`` over ``dims``."""
    b = blocking(dims, tag)
    idx = tuple(int(v) for v in idx)
    if len(idx) != b["ndims"]:
        raise RefTagError(f"index {idx} has the wrong rank for {tag!r}")
    return int(_off(b, list(idx), offset0))


def offsets_of_all(dims, tag, padded=False):
    """Offsets of every logical index (row-major over dims, or over padded dims)."""
    b = blocking(dims, tag)
    shape = b["padded_dims"] if padded else b["dims"]
    grid = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    return _off(b, list(grid)), grid


def uint_view(a):
    """View an array as the unsigned integer type of the same element size (bit-exact moves)."""
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def ref_reorder(src_flat, dims, stag, dtag):
    """Move a flat buffer laid out in ``stag`` into a new flat buffer laid out in ``dtag``.

    Both tags are abstract tags over the same logical ``dims``.  Only the logical region of
    src is read; every padded position of dst is 0.  The move is bit-exact for any dtype.
    """
    src_flat = np.asarray(src_flat).reshape(-1)
    sb = blocking(dims, stag)
    db = blocking(dims, dtag)
    n_src = math.prod(sb["padded_dims"])
    if src_flat.size < n_src:
        raise RefTagError(f"source holds {src_flat.size} elements, {stag!r} needs {n_src}")
    n_dst = math.prod(db["padded_dims"])
    dst = np.zeros(n_dst, dtype=src_flat.dtype)
    if math.prod(sb["dims"]) == 0:
        return dst
    grid = np.indices(sb["dims"], dtype=np.int64).reshape(sb["ndims"], -1)
    s_off = _off(sb, list(grid))
    d_off = _off(db, list(grid))
    uint_view(dst)[d_off] = uint_view(src_flat)[s_off]
    return dst


def ref_from_plain(plain, stag_plain, dtag):
    """Convenience: ``plain`` is an array whose axes are the physical axes of the plain tag
    ``stag_plain``; returns dst in ``dtag`` as a C-contiguous array of its physical shape."""
    plain = np.asarray(plain)
    order = blocking((1,) * len(stag_plain), stag_plain)["order"]
    dims = [0] * len(order)
    for k, d in enumerate(order):
        dims[d] = plain.shape[k]
    flat = np.ascontiguousarray(plain).reshape(-1)
    return ref_reorder(flat, dims, stag_plain, dtag).reshape(ref_physical_shape(dims, dtag))


def ref_to_plain(buf, dims, stag, dtag_plain):
    """Convenience: ``buf`` (any shape, C order) in ``stag`` -> array in plain ``dtag_plain``."""
    flat = np.ascontiguousarray(buf).reshape(-1)
    return ref_reorder(flat, dims, stag, dtag_plain).reshape(ref_physical_shape(dims, dtag_plain))


def ref_matches(dims, tag, other):
    """memory_desc_matches_tag (spec 1.6) for a descriptor built from ``tag`` over ``dims``:
    same inner blocks, and the same outer strides except for dims with dims[d]==1 and
    padded_dims[d]==1."""
    a = blocking(dims, tag)
    b = blocking(dims, other)
    if a["inner_blks"] != b["inner_blks"] or a["inner_idxs"] != b["inner_idxs"]:
        return False
    for d in range(a["ndims"]):
        if a["dims"][d] == 1 and a["padded_dims"][d] == 1:
            continue
        if a["strides"][d] != b["strides"][d]:
            return False
    return True


# --- any spelling: oneDNN aliases, x meta-tags, TVM strings -------------------------------

LETTERS = _LETTERS
# oneDNN's alias templates: a tag made of one template's letters is renamed a, b, c, ... in
# template order (upper case: the letter must be present).
TEMPLATES = ("GOIdhw", "OIdhw", "NCdhw", "TNc", "LDNC", "LDigO")


def _split(tag):
    """'OIhw4i16o4i' -> (['O', 'I', 'h', 'w'], [(4, 'i'), (16, 'o'), (4, 'i')])."""
    i = 0
    while i < len(tag) and tag[i].isalpha():
        i += 1
    outer, blocks, rest = list(tag[:i]), [], tag[i:]
    while rest:
        j = 0
        while j < len(rest) and rest[j].isdigit():
            j += 1
        if j == 0 or j == len(rest) or not rest[j].isalpha():
            raise ValueError(f"reference: cannot read the blocks of tag {tag!r}")
        blocks.append((int(rest[:j]), rest[j]))
        rest = rest[j + 1:]
    return outer, blocks


def _join(outer, blocks):
    return "".join(outer) + "".join(f"{n}{c}" for n, c in blocks)


def _expand_x(tag, ndims):
    """benchdnn meta-tag: `x` stands for the spatial letters after the highest lower-case
    letter b..l used (c when none); letters beyond ndims are then dropped."""
    outer, blocks = _split(tag)
    used = [c for c in "".join(outer) + "".join(c for _, c in blocks) if "b" <= c <= "l"]
    start = LETTERS.index(max(used)) + 1 if used else 2
    expanded = []
    for c in outer:
        expanded += list(LETTERS[start:ndims]) if c == "x" else [c]
    keep = [c for c in expanded if LETTERS.index(c.lower()) < ndims]
    return _join(keep, [(n, c) for n, c in blocks if LETTERS.index(c) < ndims])


def abstract_tag(tag, ndims):
    """The abstract tag of a oneDNN alias, meta-tag or TVM string, for `ndims` dims."""
    if tag == "x":
        return "a"
    if "x" in tag:
        return _expand_x(tag, ndims)
    outer, blocks = _split(tag)
    blocked = {c for _, c in blocks}
    if any(c.isupper() and c.lower() not in blocked for c in outer):
        # TVM: every primal axis is upper case; only the split ones stay upper case here.
        outer = [c if c.lower() in blocked else c.lower() for c in outer]
    letters = {c.lower() for c in outer} | blocked
    matches = [t for t in TEMPLATES
               if all(c.lower() in letters for c in t if c.isupper())
               and letters <= {c.lower() for c in t}]
    if len(matches) > 1:
        raise ValueError(f"reference: tag {tag!r} matches the templates {matches}")
    if matches:
        present = [c.lower() for c in matches[0] if c.lower() in letters]
        rename = {c: LETTERS[k] for k, c in enumerate(present)}
        outer = [rename[c.lower()].upper() if c.isupper() else rename[c] for c in outer]
        blocks = [(n, rename[c]) for n, c in blocks]
    result = _join(outer, blocks)
    if sorted(c.lower() for c in outer) != list(LETTERS[:len(outer)]) or len(outer) != ndims:
        raise ValueError(f"reference: tag {tag!r} (read as {result!r}) does not name "
                         f"{ndims} dims a, b, c, ...")
    return result


def offsets(dims, tag):
    """Element offsets of every logical index of `dims` (row-major), in `tag` (off_v)."""
    return offsets_of_all(dims, abstract_tag(tag, len(dims)))[0]


def physical_shape(dims, tag):
    """Outer extents in tag order, then the inner blocks."""
    return ref_physical_shape(dims, abstract_tag(tag, len(dims)))


def from_logical(logical, tag):
    """A logical (dims-shaped) array laid out in `tag`: its physical array, padding zero."""
    logical = np.asarray(logical)
    dims = logical.shape
    out = np.zeros(physical_shape(dims, tag), logical.dtype)
    uint_view(out.reshape(-1))[offsets(dims, tag)] = \
        uint_view(np.ascontiguousarray(logical).reshape(-1))
    return out


def reference_reorder(x, dims, src_tag, dst_tag):
    """x holds `dims` laid out in `src_tag` (read in C order, any shape); returns the
    physical array of `dst_tag`, padding zero. Moves bits, so any element type is exact."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.zeros(physical_shape(dims, dst_tag), flat.dtype)
    if math.prod(dims):
        uint_view(out.reshape(-1))[offsets(dims, dst_tag)] = uint_view(flat)[offsets(dims, src_tag)]
    return out
