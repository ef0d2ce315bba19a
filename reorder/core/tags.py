"""Layout tags: oneDNN abstract tags, domain aliases, `x` meta-tags and TVM layout strings.

Every spelling parses to one object, a `Tag`: the ordered list of physical axes, outermost first.
An axis is a logical dim taken whole (its outer index) or one of its inner blocks:

    nChw16c = aBcd16b   ->  (a) (b) (c) (d) (b:16)
    OIhw4i16o4i = ABcd4b16a4b -> (a) (b) (c) (d) (b:4) (a:16) (b:4)
    NCHW16c (TVM)       ->  same axes as nChw16c

A dim blocked several times takes its high digits from the blocks listed first (spec §1.4):
`4b16a4b` splits b as b_outer*16 + b4_outer*4 + b4_inner.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union
from functools import lru_cache

from .errors import ReorderError, caret

MAX_NDIMS = 12
ABC = "abcdefghijkl"

# benchdnn's logical templates (spec §2.3): upper-case letters must occur, lower-case may.
_TEMPLATES = ("GOIdhw", "OIdhw", "NCdhw", "TNc", "LDNC", "LDigO")

# Names shown beside the abstract tag in repr/explain, first match wins. Parsing does not use
# this list: every alias goes through the general rule of spec §2.3.
_DISPLAY_ALIASES = (
    "x", "nc", "ncw", "nwc", "nchw", "nhwc", "chwn", "ncdhw", "ndhwc", "nCw4c", "nCw8c", "nCw16c",
    "nChw4c", "nChw8c", "nChw16c", "nChw32c", "nCdhw4c", "nCdhw8c", "nCdhw16c", "NCw16n16c",
    "NChw16n16c", "NChw32n32c", "hwio", "dhwio", "iohw", "OIhw16i16o", "OIhw16o16i", "IOhw16o16i",
    "OIhw4i4o", "OIhw8i8o", "Ohwi16o", "OhwI16o4i", "OIhw4i16o4i", "OIhw8i16o2i", "OIhw8o16i2o",
    "OIhw16i16o4i", "OIw4i16o4i", "OI4i16o4i", "OIdhw4i16o4i", "goihw", "goidhw", "hwigo",
    "gOIhw16i16o", "gOIhw4i16o4i", "gOIhw8i16o2i", "gOIhw4o4i", "gOIhw2i8o4i", "gOhwi16o",
    "Goihw16g", "Goihw8g", "Goiw16g", "Goidhw16g", "gOIdhw4i16o4i",
)


@dataclass(frozen=True)
class Tag:
    """A parsed tag: `axes` is a tuple of (dim, block) outermost first; block 0 = outer index."""
    ndims: int
    axes: tuple[tuple[int, int], ...]
    spelling: str       # what the user wrote

    @property
    def abc(self) -> str:
        """Canonical abstract spelling, e.g. 'aBcd16b'."""
        return spell(self.ndims, self.axes)

    @property
    def alias(self) -> str:
        """A familiar domain name for this layout if one exists, else the abstract tag."""
        return _display_alias(self.abc)

    def blocks(self, dim: int) -> tuple[int, ...]:
        """Inner block sizes of `dim`, outermost first."""
        return tuple(b for d, b in self.axes if d == dim and b)

    @property
    def is_plain(self) -> bool:
        return all(b == 0 for _, b in self.axes)


def spell(ndims: int, axes: tuple[tuple[int, int], ...]) -> str:
    blocked = {d for d, b in axes if b}
    out = []
    for d, b in axes:
        letter = ABC[d]
        out.append(f"{b}{letter}" if b else (letter.upper() if d in blocked else letter))
    return "".join(out)


def parse_tag(tag: Union[str, Tag], ndims: Optional[int] = None) -> Tag:
    """Parse any tag spelling into a `Tag`. `ndims` is required for `x` meta-tags and checked
    against the tag's rank otherwise. Raises ReorderError quoting the tag with a caret."""
    if isinstance(tag, Tag):
        if ndims is not None and tag.ndims != ndims:
            raise ReorderError(f"tag {tag.spelling!r} has {tag.ndims} dims, but {ndims} were expected")
        return tag
    if not isinstance(tag, str):
        raise TypeError(f"a tag must be a string such as 'nchw' or 'aBcd16b', got {type(tag).__name__}")
    return _parse(tag, ndims)


def normalize_tag(tag: Union[str, Tag], ndims: Optional[int] = None) -> str:
    """The canonical abstract spelling of any tag: normalize_tag('nChw16c') == 'aBcd16b'."""
    return parse_tag(tag, ndims).abc


# ---------------------------------------------------------------------------------------------
# parsing

_TOKEN = re.compile(r"(\d+)?([A-Za-z])")


def _fail(tag, pos, msg, expected=None, width=1):
    text = f"bad tag {tag!r}: {msg}\n{caret(tag, pos, width)}"
    if expected:
        text += f"\n{expected}"
    raise ReorderError(text)


@lru_cache(maxsize=1024)
def _parse(tag, ndims):
    if not tag:
        raise ReorderError("empty tag; expected something like 'nchw', 'aBcd16b' or 'NCHW16c'")
    if ndims is not None and not 0 < ndims <= MAX_NDIMS:
        raise ReorderError(f"tag {tag!r}: {ndims} dims requested, but tags describe 1..{MAX_NDIMS} dims")
    text, tvm = _strip_tvm_brackets(tag)
    tokens = _tokenize(tag, text)
    if tag == "x":
        tokens = [(0, 0, "a")]
    elif any(letter == "x" and not block for _, block, letter in tokens):
        tokens = _expand_meta(tag, tokens, ndims)
    # TVM strings write every primal axis in upper case; oneDNN marks only blocked dims so.
    outer = [(p, letter) for p, block, letter in tokens if not block]
    if tvm or (outer and all(letter.isupper() for _, letter in outer)):
        tvm = True
        blocked = {letter.lower() for _, block, letter in tokens if block}
        tokens = [(p, b, (l.lower() if (b or l.lower() not in blocked) else l)) for p, b, l in tokens]
    tokens = _map_alias(tag, tokens)
    return _build(tag, tokens, ndims, tvm)


def _strip_tvm_brackets(tag):
    """TVM >= 0.24 packs >= 2 subordinate axes as `[4o4i]`; the memory order is that of the axes
    written out, so the brackets are checked and dropped."""
    if "[" not in tag and "]" not in tag:
        return tag, False
    depth, start, out = 0, 0, []
    for i, ch in enumerate(tag):
        if ch == "[":
            if depth:
                _fail(tag, i, "nested '[' in a packed axis group")
            depth, start = 1, i
            out.append(" ")
        elif ch == "]":
            if not depth:
                _fail(tag, i, "']' without a matching '['")
            group = tag[start + 1:i]
            members = _TOKEN.findall(group)
            if "".join(n + l for n, l in members) != group or len(members) < 2 \
                    or any(not n or l.isupper() for n, l in members):
                _fail(tag, start, "a packed group holds two or more blocked axes like [4o4i]",
                      width=i - start + 1)
            depth = 0
            out.append(" ")
        else:
            out.append(ch)
    if depth:
        _fail(tag, start, "'[' is never closed")
    return "".join(out), True


def _tokenize(tag, text):
    tokens, pos = [], 0
    while pos < len(text):
        if text[pos] == " ":        # where a TVM bracket was
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos].isdigit():
                end = pos
                while end < len(text) and text[end].isdigit():
                    end += 1
                _fail(tag, pos, f"block size {text[pos:end]} is not followed by a dim letter",
                      width=end - pos)
            _fail(tag, pos, f"unexpected character {text[pos]!r}",
                  "expected dim letters (a..l, or domain letters such as n c h w o i g) "
                  "and block sizes such as 16c")
        number, letter = m.groups()
        block = int(number) if number else 0
        if number and block == 0:
            _fail(tag, pos, "a block size must be a positive integer", width=len(number))
        tokens.append((pos, block, letter))
        pos = m.end()
    return tokens


def _expand_meta(tag, tokens, ndims):
    """benchdnn meta-tags: `x` stands for the remaining spatial dims (spec §2.3)."""
    if ndims is None:
        raise ReorderError(f"tag {tag!r} uses 'x' (the remaining spatial dims), so the number of "
                           f"dims must be given")
    lower = [l for _, b, l in tokens if (b or l.islower()) and l != "x" and l in ABC[1:]]
    start = max((ABC.index(l) for l in lower), default=1) + 1
    out = []
    for p, b, l in tokens:
        if l == "x" and not b:
            out.extend((p, 0, ABC[d]) for d in range(start, ndims))
        else:
            out.append((p, b, l))
    # drop letters (and their blocks) beyond the requested rank
    return [(p, b, l) for p, b, l in out if l.lower() not in ABC or ABC.index(l.lower()) < ndims]


def _map_alias(tag, tokens):
    letters = {l.lower() for _, _, l in tokens}
    matches = []
    for tpl in _TEMPLATES:
        if all(c.lower() in letters for c in tpl if c.isupper()) and letters <= set(tpl.lower()):
            matches.append(tpl)
    if len(matches) > 1:
        raise ReorderError(f"bad tag {tag!r}: ambiguous, it reads as {' and '.join(matches)}")
    if not matches:
        # A domain tag with a stray letter ('nChw16q') deserves a caret on the stray letter,
        # not on the first domain letter, which would be "unknown" as an abstract letter.
        for tpl in _TEMPLATES:
            if all(c.lower() in letters for c in tpl if c.isupper()):
                for p, b, l in tokens:
                    if l.lower() not in tpl.lower():
                        _fail(tag, p + len(str(b)) if b else p, f"unknown letter {l!r}",
                              f"a {tpl}-style tag uses only the letters {tpl.lower()}")
        return tokens
    order = [c for c in matches[0].lower() if c in letters]
    to_abc = {c: ABC[i] for i, c in enumerate(order)}
    return [(p, b, to_abc[l.lower()].upper() if l.isupper() else to_abc[l.lower()])
            for p, b, l in tokens]


def _build(tag, tokens, ndims, tvm):
    expected = "expected dim letters a..l (one per dim) or a domain alias such as nchw, OIhw16i16o"
    outer_pos = {}
    for p, b, l in tokens:
        if l.lower() not in ABC:
            _fail(tag, p + len(str(b)) if b else p, f"unknown letter {l!r}", expected)
        if b:
            if l.isupper():
                _fail(tag, p + len(str(b)), "block letters are lower case (the upper-case letter "
                      "marks the blocked dim's outer position)")
        else:
            d = ABC.index(l.lower())
            if d in outer_pos:
                _fail(tag, p, f"dim {l.lower()!r} appears twice as an outer letter")
            outer_pos[d] = p
    rank = len(outer_pos)
    if ndims is not None and rank != ndims:
        _fail(tag, 0, f"the tag describes {rank} dims, but the tensor has {ndims}",
              f"expected a tag with {ndims} outer letters", width=len(tag))
    if rank > MAX_NDIMS:
        raise ReorderError(f"tag {tag!r} has {rank} dims; at most {MAX_NDIMS} are supported")
    for d, p in outer_pos.items():
        if d >= rank:
            _fail(tag, p, f"letter {ABC[d]!r} names dim {d}, but the tag has only {rank} dims "
                  f"({ABC[0]}..{ABC[rank - 1]})")
    seen_block = False
    axes = []
    for p, b, l in tokens:
        d = ABC.index(l.lower())
        if b:
            if d >= rank:
                _fail(tag, p + len(str(b)), f"block on dim {l!r}, which the tag does not have "
                      f"(dims are {ABC[0]}..{ABC[rank - 1]})")
            seen_block = True
            if b > 1:                  # oneDNN skips blocks of size 1
                axes.append((d, b))
        else:
            if seen_block and not tvm:
                _fail(tag, p, "outer letters must all come before the inner blocks")
            axes.append((d, 0))
    if not tvm:
        blocked = {d for d, b in axes if b}
        for p, b, l in tokens:
            d = ABC.index(l.lower())
            if not b and l.isupper() and d not in blocked:
                _fail(tag, p, f"{l!r} is upper case but dim {l.lower()!r} has no block",
                      f"write {l.lower()!r} for an unblocked dim, or add a block such as 16{l.lower()}")
            if not b and l.islower() and d in blocked:
                _fail(tag, p, f"{l!r} is lower case but dim {l!r} is blocked",
                      f"write {l.upper()!r} for a blocked dim")
    return Tag(rank, tuple(axes), tag)


@lru_cache(maxsize=None)
def _alias_table():
    table = {}
    for name in _DISPLAY_ALIASES:
        table.setdefault(_parse(name, None).abc, name)
    return table


def _display_alias(abc):
    return _alias_table().get(abc, abc)
