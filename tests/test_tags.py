"""Tag normalisation: domain aliases, ``x`` meta-tags, TVM layout strings and strict errors."""


import pytest

import reorder
from reorder.core.tags import normalize_tag

from reorder.testing.reference import parse_tag as ref_parse_tag

# Every alias of the layout spec, table 2.4: (alias, abstract).  ndims = len of the outer part.
ALIASES = [
    ("nc", "ab"), ("oi", "ab"), ("tn", "ab"),
    ("cn", "ba"), ("io", "ba"), ("nt", "ba"),
    ("ncw", "abc"), ("oiw", "abc"), ("tnc", "abc"),
    ("nwc", "acb"), ("owi", "acb"),
    ("ntc", "bac"),
    ("wio", "cba"),
    ("iwo", "bca"),
    ("nchw", "abcd"), ("oihw", "abcd"), ("goiw", "abcd"), ("ldio", "abcd"), ("ldgo", "abcd"),
    ("nhwc", "acdb"), ("ohwi", "acdb"),
    ("chwn", "bcda"), ("ihwo", "bcda"),
    ("hwio", "cdba"),
    ("iohw", "bacd"),
    ("gowi", "abdc"), ("ldoi", "abdc"),
    ("wigo", "dcab"),
    ("ncdhw", "abcde"), ("oidhw", "abcde"), ("goihw", "abcde"), ("ldigo", "abcde"),
    ("ndhwc", "acdeb"), ("odhwi", "acdeb"),
    ("dhwio", "cdeba"),
    ("hwigo", "decab"),
    ("gohwi", "abdec"), ("ldgoi", "abdec"),
    ("giohw", "acbde"),
    ("goidhw", "abcdef"),
    ("dhwigo", "defcab"),
    ("nCw16c", "aBc16b"),
    ("nChw8c", "aBcd8b"),
    ("nChw16c", "aBcd16b"),
    ("nChw4c", "aBcd4b"),
    ("nChw32c", "aBcd32b"),
    ("nCdhw16c", "aBcde16b"),
    ("NCw16n16c", "ABc16a16b"),
    ("NChw16n16c", "ABcd16a16b"),
    ("NChw32n32c", "ABcd32a32b"),
    ("OIhw16i16o", "ABcd16b16a"),
    ("OIhw16o16i", "ABcd16a16b"),
    ("IOhw16o16i", "BAcd16a16b"),
    ("OIhw4i4o", "ABcd4b4a"),
    ("OIhw8i8o", "ABcd8b8a"),
    ("Ohwi16o", "Acdb16a"),
    ("OhwI16o4i", "AcdB16a4b"),
    ("OIhw4i16o4i", "ABcd4b16a4b"),
    ("OIhw8i16o2i", "ABcd8b16a2b"),
    ("OIhw8o16i2o", "ABcd8a16b2a"),
    ("OIhw16i16o4i", "ABcd16b16a4b"),
    ("OIw4i16o4i", "ABc4b16a4b"),
    ("OI4i16o4i", "AB4b16a4b"),
    ("OIdhw4i16o4i", "ABcde4b16a4b"),
    ("gOIhw16i16o", "aBCde16c16b"),
    ("gOIhw4i16o4i", "aBCde4c16b4c"),
    ("gOIhw8i16o2i", "aBCde8c16b2c"),
    ("gOIhw4o4i", "aBCde4b4c"),
    ("gOIhw2i8o4i", "aBCde2c8b4c"),
    ("gOhwi16o", "aBdec16b"),
    ("Goihw16g", "Abcde16a"),
    ("Goihw8g", "Abcde8a"),
    ("Goiw16g", "Abcd16a"),
    ("Goidhw16g", "Abcdef16a"),
    ("gOIdhw4i16o4i", "aBCdef4c16b4c"),
    ("ldOi32o", "abDc32d"),
]

# Abstract tags come back unchanged.
ABSTRACT = [
    "a", "ab", "ba", "abcd", "acdb", "aBcd16b", "ABcd4b16a4b", "AB32a32b8a4b", "BA16a64b4a",
    "BA16a32b2a", "aCB16b64c4b", "Abcdef16a", "aBcdef16b", "abcdefghijkl", "A16a",
    "ABcd4a8b8a4b", "cBa16b",
]

# benchdnn "x" meta-tags (spec 2.3): (tag, ndims, abstract)
META = [
    ("aBx16b", 4, "aBcd16b"),
    ("xba", 4, "cdba"),
    ("aBCx4c16b4c", 5, "aBCde4c16b4c"),
    ("ABx4b16a4b", 2, "AB4b16a4b"),
    ("x", 1, "a"),
    ("abx", 4, "abcd"),
    ("abx", 5, "abcde"),
    ("abx", 2, "ab"),
    ("axb", 4, "acdb"),
    ("axb", 3, "acb"),
    ("aBx16b", 3, "aBc16b"),
    ("aBx16b", 5, "aBcde16b"),
    ("ABx16a16b", 4, "ABcd16a16b"),
]

# TVM layout strings: (string, ndims, abstract)
TVM = [
    ("NCHW", 4, "abcd"),
    ("NHWC", 4, "acdb"),
    ("NCHW16c", 4, "aBcd16b"),
    ("NCHW8c", 4, "aBcd8b"),
    ("NHWC4c", 4, "acdB4b"),
    ("OIHW", 4, "abcd"),
    ("OIHW16i16o", 4, "ABcd16b16a"),
    ("OIHW4i16o4i", 4, "ABcd4b16a4b"),
    ("NCW", 3, "abc"),
    ("NCDHW16c", 5, "aBcde16b"),
]


def _ndims_of(abstract):
    return len(ref_parse_tag(abstract)[0])


@pytest.mark.parametrize("alias,abstract", ALIASES, ids=[a for a, _ in ALIASES])
def test_alias(alias, abstract):
    assert normalize_tag(alias, _ndims_of(abstract)) == abstract


def test_alias_table_is_well_formed():
    # the table itself: every abstract tag parses in the reference, and there are no duplicates
    assert len({a for a, _ in ALIASES}) == len(ALIASES)
    for _, abstract in ALIASES:
        ref_parse_tag(abstract)


@pytest.mark.parametrize("tag", ABSTRACT)
def test_abstract_unchanged(tag):
    assert normalize_tag(tag, _ndims_of(tag)) == tag


@pytest.mark.parametrize("tag,ndims,abstract", META, ids=[f"{t}@{n}" for t, n, _ in META])
def test_meta_x(tag, ndims, abstract):
    assert normalize_tag(tag, ndims) == abstract


@pytest.mark.parametrize("tag,ndims,abstract", TVM, ids=[t for t, _, _ in TVM])
def test_tvm(tag, ndims, abstract):
    assert normalize_tag(tag, ndims) == abstract


def test_normalize_is_idempotent():
    for alias, abstract in ALIASES:
        n = _ndims_of(abstract)
        once = normalize_tag(alias, n)
        assert normalize_tag(once, n) == once


def test_reorder_error_is_value_error():
    assert issubclass(reorder.ReorderError, ValueError)


# (tag, ndims, allowed caret columns (0-based, relative to the tag's first character), what)
BAD_TAGS = [
    ("nChw16q", 4, {6}, "unknown letter"),
    ("abcb", 4, {3}, "repeated outer letter"),
    ("aBcd16e", 4, {4, 5, 6}, "block on a missing dim"),
    ("abcd16b", 4, {1, 4, 5, 6}, "block on a lower-case dim"),
    ("aBcd", 4, {1}, "upper case without blocks"),
    ("aBcd0b", 4, {4, 5}, "zero block"),
    ("abcd", 3, None, "rank != ndims"),
    ("abc", 4, None, "rank != ndims"),
    ("nChw16c", 5, None, "rank != ndims"),
]


def _caret_columns(message, tag):
    """Columns (relative to the quoted tag) of the carets in ``message``; None if no caret line."""
    lines = message.splitlines()
    for k, line in enumerate(lines):
        if line.strip() and set(line.strip()) == {"^"}:
            # the quoted tag: the nearest line above that contains it
            for j in range(k - 1, -1, -1):
                if tag in lines[j]:
                    base = lines[j].index(tag)
                    return {c - base for c, ch in enumerate(line) if ch == "^"}
            return set()
    return None


@pytest.mark.parametrize("tag,ndims,cols,what", BAD_TAGS, ids=[f"{t}@{n}" for t, n, _, _ in BAD_TAGS])
def test_bad_tag(tag, ndims, cols, what):
    with pytest.raises(reorder.ReorderError) as info:
        normalize_tag(tag, ndims)
    msg = str(info.value)
    assert tag in msg, f"{what}: the message does not quote {tag!r}: {msg!r}"
    carets = _caret_columns(msg, tag)
    assert carets is not None, f"{what}: no caret line in {msg!r}"
    assert carets, f"{what}: the caret line is not under the quoted tag in {msg!r}"
    if cols is not None:
        assert carets & cols, f"{what}: caret at {sorted(carets)}, expected one of {sorted(cols)}:\n{msg}"


@pytest.mark.parametrize("tag,ndims", [("nChw16q", 4), ("abcb", 4), ("aBcd", 4)])
def test_bad_tag_through_desc(tag, ndims):
    with pytest.raises(reorder.ReorderError) as info:
        reorder.Desc((2,) * ndims, "f32", tag)
    assert tag in str(info.value)
