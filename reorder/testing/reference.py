"""A slow reorder that the demo and `bench` use to check the fast path, bit for bit.

It is written from oneDNN's tag rules alone (abstract "abc" tags, the general alias rule,
benchdnn's `x` meta-tags, plain TVM strings) and the off_v offset formula, with numpy
integer indexing. It imports nothing from this package, so a bug in the tag parser, the
descriptors, the planner or the kernels cannot hide by agreeing with itself here.
"""
import math

import numpy as np

__all__ = ["abstract_tag", "blocking", "offsets", "physical_shape", "from_logical",
           "reference_reorder"]

LETTERS = "abcdefghijkl"
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


def blocking(dims, tag):
    """(outer order, inner blocks as (size, dim) outermost first, padded dims, outer strides)
    of a dense layout built from `tag`: blocks of size 1 vanish, each dim is padded up to the
    product of its blocks, and the outer strides grow from the innermost outer letter out,
    starting at the product of all blocks (a zero-size dim leaves the stride unchanged)."""
    outer, blocks = _split(abstract_tag(tag, len(dims)))
    order = [LETTERS.index(c.lower()) for c in outer]
    inner = [(n, LETTERS.index(c)) for n, c in blocks if n != 1]
    blk = [1] * len(dims)
    for n, d in inner:
        blk[d] *= n
    padded = [-(-v // b) * b for v, b in zip(dims, blk)]
    strides = [0] * len(dims)
    stride = math.prod(n for n, _ in inner)
    for d in reversed(order):
        strides[d] = stride
        stride *= max(padded[d] // blk[d], 1)
    return order, inner, padded, strides


def offsets(dims, tag):
    """Element offsets of every logical index of `dims` (row-major), in `tag` (off_v)."""
    order, inner, padded, strides = blocking(dims, tag)
    p = [g.reshape(-1) for g in np.indices(tuple(dims), dtype=np.int64)]
    off = np.zeros(math.prod(dims), np.int64)
    bs = 1
    for n, d in reversed(inner):            # the innermost block gives the lowest digits
        off += (p[d] % n) * bs
        p[d] = p[d] // n
        bs *= n
    for d in range(len(dims)):
        off += p[d] * strides[d]
    return off


def physical_shape(dims, tag):
    """Outer extents in tag order, then the inner blocks."""
    order, inner, padded, _ = blocking(dims, tag)
    blk = [1] * len(dims)
    for n, d in inner:
        blk[d] *= n
    return tuple(padded[d] // blk[d] for d in order) + tuple(n for n, _ in inner)


def _bits(a):
    return a.view(f"u{a.dtype.itemsize}")


def from_logical(logical, tag):
    """A logical (dims-shaped) array laid out in `tag`: its physical array, padding zero."""
    logical = np.asarray(logical)
    dims = logical.shape
    out = np.zeros(physical_shape(dims, tag), logical.dtype)
    _bits(out.reshape(-1))[offsets(dims, tag)] = _bits(np.ascontiguousarray(logical).reshape(-1))
    return out


def reference_reorder(x, dims, src_tag, dst_tag):
    """x holds `dims` laid out in `src_tag` (read in C order, any shape); returns the
    physical array of `dst_tag`, padding zero. Moves bits, so any element type is exact."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.zeros(physical_shape(dims, dst_tag), flat.dtype)
    if math.prod(dims):
        _bits(out.reshape(-1))[offsets(dims, dst_tag)] = _bits(flat)[offsets(dims, src_tag)]
    return out
