"""A slow, independent reference for oneDNN-style layouts.

Written from the layout spec (memory descriptor, abstract "abc" tags, off_v), with plain
numpy integer index arithmetic.  It deliberately shares no code with the ``reorder`` package
and never imports it, so that the tests compare two independent implementations.

Only *abstract* tags are understood here (``abcd``, ``aBcd16b``, ``ABcd4b16a4b``,
``AB32a32b8a4b``, ``BA16a64b4a``, ...): letters ``a``..``l`` give the outer dims in memory
order (outermost first, upper case = the dim has inner blocks), followed by ``<N><letter>``
inner blocks listed outermost first.  Domain aliases (``nchw``, ``OIhw16i16o``) are mapped by
the tests' own tables, never here.
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
