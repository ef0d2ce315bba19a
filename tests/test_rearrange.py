"""rearrange(): bit for bit against einops on every pattern einops accepts, against an index
arithmetic reference for padded splits, the inverse with dims=, errors with a caret, and the
plan it compiles to (the very plan of the equivalent tags)."""
import re
import time

import numpy as np
import pytest

import reorder as ro
from reorder import rearrange

einops = pytest.importorskip("einops")
ml_dtypes = pytest.importorskip("ml_dtypes")


# ------------------------------------------------------------------------------ reference

def _groups(side):
    """'n (c c16) h w' -> [['n'], ['c', 'c16'], ['h'], ['w']] (no '...' in reference cases)."""
    out = []
    for paren, single in re.findall(r"\(([^)]*)\)|(\S+)", side):
        names = paren.split() if paren or not single else [single]
        out.append([a for a in names if a != "1"])
    return out


def ref_rearrange(x, pattern, pad=0, **sizes):
    """Slow reference from the definition: every output position is a tuple of digits; an
    input group's index is the mixed-radix number of its digits; positions past the input
    axis are `pad`."""
    left, right = (_groups(s) for s in pattern.split("->"))
    sizes = dict(sizes)
    for g, n in zip(left, x.shape):
        unknown = [a for a in g if a not in sizes]
        known = int(np.prod([sizes[a] for a in g if a in sizes]))
        if unknown:
            sizes[unknown[0]] = -(-n // known)
    order = [a for g in right for a in g]
    digits = [sizes[a] for a in order]
    idx = dict(zip(order, np.indices(digits))) if digits else {}
    valid = np.ones(digits, bool)
    src = []
    for g, n in zip(left, x.shape):
        coord = np.zeros(digits, np.int64)
        for a in g:
            coord = coord * sizes[a] + idx[a]
        valid &= coord < n
        src.append(coord)
    out = np.empty(digits, x.dtype)
    out[...] = np.array(pad).astype(x.dtype)
    out[valid] = x[tuple(c[valid] for c in src)]
    return out.reshape([int(np.prod([sizes[a] for a in g])) for g in right])


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8)


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(_bits(a), _bits(b))


# --------------------------------------------------------------------- einops comparisons

EINOPS_CASES = [
    ("a b -> b a", (5, 7), {}),
    ("a b c -> c b a", (3, 4, 5), {}),
    ("a b c -> (a b) c", (3, 4, 5), {}),
    ("a b c -> a (c b)", (3, 4, 5), {}),
    ("(a b) c -> a b c", (12, 5), {"a": 3}),
    ("(a b) c -> b c a", (12, 5), {"b": 4}),
    ("b (h w) c -> b h w c", (2, 12, 3), {"h": 3}),
    ("b c (h h2) (w w2) -> b (h w) (c h2 w2)", (2, 3, 4, 6), {"h2": 2, "w2": 2}),
    ("b (h h2) (w w2) c -> b h w (h2 w2 c)", (2, 4, 6, 3), {"h2": 2, "w2": 3}),
    ("n c h w -> n h w c", (2, 5, 3, 4), {}),
    ("n h w c -> n c h w", (2, 3, 4, 5), {}),
    ("n (c c16) h w -> n c h w c16", (2, 32, 3, 2), {"c16": 16}),
    ("n c h w c16 -> n (c c16) h w", (2, 2, 3, 2, 16), {}),
    ("(o o16) (i i16) h w -> o i h w i16 o16", (32, 16, 3, 3), {"o16": 16, "i16": 16}),
    ("(o o16) (i i4a i4b) h w -> o i h w i4a o16 i4b", (32, 32, 1, 3),
     {"o16": 16, "i4a": 4, "i4b": 4}),
    ("(a b c) -> c b a", (24,), {"a": 2, "b": 3}),
    ("a b c d e -> e d c b a", (2, 1, 3, 2, 2), {}),
    ("x -> x", (9,), {}),
    ("b (c1 c2) -> b (c2 c1)", (3, 12), {"c1": 4}),
    ("(g o) i h w -> g o i h w", (6, 4, 3, 3), {"g": 2}),
    ("... c -> c ...", (2, 3, 4, 5), {}),
    ("a ... -> ... a", (2, 3, 4), {}),
    ("a b ... -> (a b) ...", (2, 3, 4, 5), {}),
    ("... -> (...)", (2, 3, 4), {}),
    ("a ... b -> b (...) a", (2, 3, 4, 5), {}),
    ("a ... b -> b ... a", (2, 5), {}),
    ("a 1 b -> a b", (3, 1, 4), {}),
    ("a b -> a 1 b 1", (3, 4), {}),
    ("a () b -> b a ()", (3, 1, 4), {}),
    ("a b -> (b 1 a)", (3, 4), {}),
    ("(a b) -> a b", (0,), {"b": 4}),
    ("a b c -> c (a b)", (0, 3, 2), {}),
    ("a b c -> c a b", (1, 1, 1), {}),
    ("h w c -> c h w", (7, 9, 3), {}),
    ("a (b c) -> (c a) b", (5, 6), {"c": 3}),
]

DTYPES = [np.float32, np.uint8, np.float16, np.int64, ml_dtypes.bfloat16, np.bool_, np.complex64]


def _views(x):
    """The same values behind several memory arrangements: contiguous, transposed, reversed,
    offset and stepped."""
    yield "contiguous", x
    yield "transposed", np.ascontiguousarray(x.T).T
    if x.ndim and x.shape[0] > 1:
        flipped = np.ascontiguousarray(x[::-1])[::-1]
        yield "negative", flipped
    big = np.zeros((x.shape[0] * 2 + 1,) + x.shape[1:] if x.ndim else (), x.dtype)
    if x.ndim:
        big[1::2] = x
        yield "stepped+offset", big[1::2]


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 120, size=shape).astype(dtype)


COUNT = {"einops": 0}


@pytest.mark.parametrize("pattern,shape,sizes", EINOPS_CASES, ids=[c[0] for c in EINOPS_CASES])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_equals_einops(pattern, shape, sizes, dtype):
    x = _values(shape, dtype)
    want = np.ascontiguousarray(einops.rearrange(x, pattern, **sizes))
    for name, v in _views(x):
        before = v.copy()
        for threads in (1, 2):
            got = rearrange(v, pattern, threads=threads, **sizes)
            assert _same(got, want), (name, threads)
            assert got.flags.c_contiguous
            COUNT["einops"] += 1
        assert _same(v, before), "the input was modified"


def test_equals_einops_large_threads():
    """Above the single-thread size, with 2 threads."""
    x = _values((4, 48, 33, 17), np.float32)
    for pattern, sizes in [("n (c c16) h w -> n c h w c16", {"c16": 16}),
                           ("n c h w -> n h w c", {}), ("n c h w -> (h w) (n c)", {})]:
        want = np.ascontiguousarray(einops.rearrange(x, pattern, **sizes))
        assert _same(rearrange(x, pattern, threads=2, **sizes), want)


def test_out_is_filled_and_returned():
    x = _values((2, 32, 3, 3), np.float32)
    out = np.full((2, 2, 3, 3, 16), np.nan, np.float32)
    got = rearrange(x, "n (c c16) h w -> n c h w c16", c16=16, out=out)
    assert got is out
    assert _same(out, np.ascontiguousarray(einops.rearrange(x, "n (c c16) h w -> n c h w c16",
                                                            c16=16)))


# -------------------------------------------------------------------- padding and inverse

PAD_CASES = [
    ("n (c c16) h w -> n c h w c16", (2, 30, 3, 2), {"c16": 16}),
    ("n (c c16) h w -> n c h w c16", (1, 17, 1, 1), {"c16": 16}),
    ("n (c c16) h w -> n c h w c16", (3, 1, 2, 2), {"c16": 16}),
    ("n (c c16) h w -> n c16 h w c", (2, 20, 3, 2), {"c16": 8}),
    ("(o o16) (i i4a i4b) h w -> o i h w i4a o16 i4b", (20, 30, 3, 3),
     {"o16": 16, "i4a": 4, "i4b": 4}),
    ("(a b) -> (b a)", (30,), {"b": 16}),
    ("(a b c) d -> d c a b", (10, 3), {"b": 2, "c": 3}),
    ("(a b) c -> c a b", (5, 4), {"a": 4, "b": 4}),          # pads by more than one step of a
    ("(c) h -> h c", (5, 3), {"c": 8}),
    ("a (b c) -> c a b", (3, 5), {"c": 2}),
    ("n (c c4) -> (n c) c4", (3, 7), {"c4": 4}),
]


@pytest.mark.parametrize("pattern,shape,sizes", PAD_CASES, ids=[c[0] for c in PAD_CASES])
@pytest.mark.parametrize("pad", [0, 7, np.nan], ids=["pad0", "pad7", "padnan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, ml_dtypes.bfloat16,
                                   ml_dtypes.float8_e4m3fn, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_padded_split_matches_reference(pattern, shape, sizes, pad, dtype):
    if np.dtype(dtype).kind == "i" and pad is np.nan:
        pytest.skip("no NaN in integers")
    x = _values(shape, dtype, seed=3)
    want = ref_rearrange(x, pattern, pad=pad, **sizes)
    for name, v in _views(x):
        for threads in (1, 2):
            got = rearrange(v, pattern, pad=pad, threads=threads, **sizes)
            assert _same(got, want), (name, threads)


def test_padded_split_is_the_blocked_tag():
    """Same Desc, same cached Plan, same bytes as reorder() with the tag; the inverse with
    dims= gives the input back."""
    x = _values((2, 30, 5, 3), np.float32)
    y = rearrange(x, "n (c c16) h w -> n c h w c16", c16=16)
    assert _same(y, ro.reorder(x, "nchw", "nChw16c"))
    back = rearrange(y, "n c h w c16 -> n (c c16) h w", dims=x.shape)
    assert _same(back, x)
    assert _same(ro.reorder(y, "nChw16c", "nchw", dims=x.shape), back)
    from reorder.plan.cache import REARRANGE_CALLS, REORDER_CALLS
    compiled = {(k[0], k[1]): c for k, c in REARRANGE_CALLS.items()}
    fwd = compiled[("n (c c16) h w -> n c h w c16", x.shape)].plan
    inv = compiled[("n c h w c16 -> n (c c16) h w", y.shape)].plan
    assert fwd is REORDER_CALLS[(x.shape, x.strides, x.dtype, "nchw", "nChw16c", None, None, None)]
    assert inv is REORDER_CALLS[(y.shape, y.strides, y.dtype, "nChw16c", "nchw", x.shape, None, None)]


def test_inverse_drops_padding_for_weights():
    w = _values((20, 30, 3, 3), np.float32)
    pat = "(o o16) (i i4a i4b) h w -> o i h w i4a o16 i4b"
    q = rearrange(w, pat, o16=16, i4a=4, i4b=4)
    assert _same(q, ro.reorder(w, "oihw", "OIhw4i16o4i"))
    inv = "o i h w i4a o16 i4b -> (o o16) (i i4a i4b) h w"
    assert _same(rearrange(q, inv, dims=w.shape), w)
    # dims may crop less than the whole padding, and None keeps a group whole
    assert _same(rearrange(q, inv, dims=(25, 31, 3, 3)),
                 ref_rearrange(q, inv)[:25, :31])


def test_pad_value_checked():
    x = _values((2, 5), np.uint8)
    with pytest.raises(ValueError, match="pad=-1 does not fit u8"):
        rearrange(x, "a (b c) -> a b c", c=4, pad=-1)
    with pytest.raises(ValueError, match="pad=0.5 is not an integer"):
        rearrange(x, "a (b c) -> a b c", c=4, pad=0.5)


# ------------------------------------------------------------------------------- errors

ERRORS = [
    ("a b c", {}, (2, 3, 4), "no '->'", 5),
    ("a b -> b a -> a", {}, (2, 3), "a second '->'", 11),
    ("a (b (c)) -> a b c", {}, (2, 3, 4), "nested parentheses", 5),
    ("a b) -> a b", {}, (2, 3), "closes no group", 3),
    ("a (b -> a b", {}, (2, 3), "never closed", 2),
    ("a b a -> a b", {}, (2, 3, 4), "appears twice", 4),
    ("a b -> a b b", {}, (2, 3), "appears twice", 11),
    ("a b -> a", {}, (2, 3), "input side only", 2),
    ("a -> a b", {}, (2,), "output side only", 7),
    ("a b -> a c", {}, (2, 3), "input side only", 2),
    ("a.b -> a b", {}, (2, 3), "dot outside", 1),
    ("a ... ... -> a", {}, (2, 3), "second '...'", 6),
    ("(a ...) -> a ...", {}, (2, 3), "inside parentheses", 3),
    ("a b -> a b ...", {}, (2, 3), "output side only", 11),
    ("a (b 2) -> a b 2", {}, (2, 6), "anonymous axis '2'", 5),
    ("a _b -> a _b", {}, (2, 6), "must not start or end with '_'", 2),
    ("a b$ -> a b", {}, (2, 3), "unexpected character '\\$'", 3),
    ("a lambda -> a lambda", {}, (2, 3), "keyword", 2),
    ("a b c -> a b c", {}, (2, 3), "the input side has 3 axes but the array has 2", 0),
    ("a (b c) -> a b c", {}, (2, 6), "2 axes of unknown size", 2),
    ("a (b c) -> a b c", {"b": 2, "c": 2}, (2, 6), "does not fit b=2 \\* c=2 = 4", 2),
    ("a (b c) -> a b c", {"c": 0}, (2, 6), "size-0 part", 2),
    ("a b -> b a", {"a": 3}, (2, 3), "a=3 but the array's axis has 2; write \\(a\\) to pad", 0),
    ("(c c16) -> c c16", {"c16": 16}, (30,), None, None),     # fine: pads
    ("(a) b -> b a", {"a": 3}, (2, 3), None, None),          # fine: pads a to 3
]


@pytest.mark.parametrize("pattern,sizes,shape,message,column", ERRORS,
                         ids=[e[0] for e in ERRORS])
def test_errors_quote_the_pattern_with_a_caret(pattern, sizes, shape, message, column):
    x = _values(shape, np.float32)
    before = x.copy()
    if message is None:
        rearrange(x, pattern, **sizes)
        return
    with pytest.raises(ValueError) as info:
        rearrange(x, pattern, **sizes)
    text = str(info.value)
    assert re.search(message, text), text
    lines = text.splitlines()
    assert lines[-2] == "    " + pattern, text
    assert lines[-1].index("^") - 4 == column, text
    assert _same(x, before)


@pytest.mark.parametrize("kwargs,exc,message", [
    ({"c": 4.0}, TypeError, "axis size c=4.0 must be an integer"),
    ({"c": "4"}, TypeError, "axis size c='4' must be an integer"),
    ({"c": True}, TypeError, "must be an integer"),
    ({"c": -4}, ValueError, "axis size c=-4 is negative"),
    ({"c": 4, "z": 2}, ValueError, "size keyword z=2 names no axis"),
    ({"c": 3, "dims": (2, 9)}, ValueError, "dims=\\(2, 9\\) has 2 entries but the output side"),
    ({"c": 3, "dims": (2, 2, 4)}, ValueError, "dims asks for 4 here, but the group holds 3"),
    ({"c": 3, "dims": "ab"}, TypeError, "dims must be a sequence of integers"),
])
def test_bad_sizes(kwargs, exc, message):
    x = _values((2, 6), np.float32)
    with pytest.raises(exc, match=message):
        rearrange(x, "a (b c) -> a b c", **kwargs)


@pytest.mark.parametrize("size", [4.0, -4])
def test_bad_size_points_at_the_axis(size):
    """A bad split size names the axis and puts the caret under it in the pattern."""
    x = _values((2, 6), np.float32)
    with pytest.raises((TypeError, ValueError)) as e:
        rearrange(x, "a (b cc) -> a b cc", cc=size)
    assert str(e.value).splitlines()[1:] == ["    a (b cc) -> a b cc", "         ^^"]


def test_pad_and_crop_in_one_call_refused():
    x = _values((2, 5), np.float32)
    with pytest.raises(ValueError, match="pads while dims= crops"):
        rearrange(x, "a (b c) -> (a b) c", c=4, dims=(3, 4))


def test_bad_inputs():
    with pytest.raises(TypeError, match="a pattern is a string"):
        rearrange(np.zeros(3), 5)
    with pytest.raises(TypeError, match="expected an array, got None"):
        rearrange(None, "a -> a")
    x = _values((2, 6), np.float32)
    with pytest.raises(ValueError, match="out has shape"):
        rearrange(x, "a b -> b a", out=np.empty((2, 6), np.float32))
    with pytest.raises(ValueError, match="out has dtype"):
        rearrange(x, "a b -> b a", out=np.empty((6, 2), np.float64))


# ------------------------------------------------------------------------- call overhead

def test_cached_call_overhead_close_to_reorder():
    """A repeated call reuses the compiled plan: its overhead stays within a few
    microseconds of reorder()'s on the same tiny tensor (timing printed; the bound is loose
    because CI machines are shared)."""
    x = _values((1, 16, 2, 2), np.float32)
    out = np.empty((1, 1, 2, 2, 16), np.float32)

    def best(fn, n=2000):
        fn()
        t = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t.append((time.perf_counter() - t0) / n)
        return min(t)
    r = best(lambda: ro.reorder(x, "nchw", "nChw16c", out=out))
    e = best(lambda: rearrange(x, "n (c c16) h w -> n c h w c16", c16=16, out=out))
    print(f"\ncall overhead: reorder {r * 1e6:.2f} us, rearrange {e * 1e6:.2f} us")
    assert e < r + 20e-6


# --------------------------------------------------------------- random patterns vs einops

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def _patterns(draw):
    """A random einops pattern: each input axis split into 1-3 named digits, the digits
    permuted and regrouped on the output side."""
    names, left, sizes, shape = iter("abcdefghijklmnop"), [], {}, []
    for _ in range(draw(st.integers(1, 4))):
        digits = [next(names) for _ in range(draw(st.integers(1, 3)))]
        ds = [draw(st.integers(1, 4)) for _ in digits]
        shape.append(int(np.prod(ds)))
        left.append(digits[0] if len(digits) == 1 else f"({' '.join(digits)})")
        sizes.update({d: s for d, s in zip(digits[1:], ds[1:])})
    flat = [n for g in left for n in g.strip("()").split()]
    order = draw(st.permutations(flat))
    right, i = [], 0
    while i < len(order):
        k = draw(st.integers(1, len(order) - i))
        right.append(order[i] if k == 1 else f"({' '.join(order[i:i + k])})")
        i += k
    return f"{' '.join(left)} -> {' '.join(right)}", tuple(shape), sizes


@pytest.mark.slow                   # a Hypothesis search of 150 patterns
@settings(max_examples=150, deadline=None)
@given(_patterns(), st.sampled_from([np.float32, np.int8, np.float16]), st.booleans())
def test_random_patterns_equal_einops(case, dtype, transposed):
    pattern, shape, sizes = case
    x = _values(shape, dtype, seed=len(pattern))
    if transposed:
        x = np.ascontiguousarray(x.T).T
    want = np.ascontiguousarray(einops.rearrange(x, pattern, **sizes))
    assert _same(rearrange(x, pattern, **sizes), want), pattern
