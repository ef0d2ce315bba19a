"""`rearrange()`: einops patterns compiled to the same descriptors and plans as tags.

A pattern names elementary axes ("digits") and groups them: `n (c c16) h w -> n c h w c16`.
Each group on the input side is one logical dim whose index is the mixed-radix number of its
digits, so the output is a `Desc` whose axes are those digits, in the output's order, with
C-contiguous strides. That is exactly how a blocked tag is described (`nChw16c`: c = 16*C +
c16), so the planner, its kernels and its zero padding serve patterns unchanged.

Beyond einops: a split that does not divide (c = 30 into c16 = 16) pads, as a blocked tag does;
`pad=` gives the value (0 by default, what oneDNN keeps there). The inverse pattern with
`dims=` (the result's shape) drops the padding again; then the logical dims are the output's
groups and the input's digits are the blocked side, as in `nChw16c -> nchw`.
"""
from __future__ import annotations

import keyword
import math
import re
from functools import lru_cache
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from ..core.desc import Axis, Desc
from ..core.dtypes import as_dtype, dtype_of_numpy
from ..core.errors import ReorderError, caret
from .interop import read_words, wrap_like
from ..plan.cache import REARRANGE_CALLS, cached_plan

__all__ = ["rearrange", "RearrangeError"]

ELLIPSIS = "..."


class RearrangeError(ReorderError):
    """A bad pattern or axis size; the message quotes the pattern with a caret."""


class _Tok(NamedTuple):
    name: str          # an axis name, ELLIPSIS, or "1" for a unit axis
    pos: int           # position in the pattern, for the caret


class _Side(NamedTuple):
    groups: tuple      # of (tuple of _Tok, pos, is_paren)
    pos: int           # where the side starts in the pattern
    end: int


def _fail(pattern, pos, msg, width=1):
    raise RearrangeError(f"bad pattern {pattern!r}: {msg}\n{caret(pattern, pos, width)}")


def _point_at(pattern, name):
    """The pattern with a caret under the first use of axis `name`, or nothing if unused."""
    m = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", pattern) if isinstance(pattern, str) \
        else None
    return "" if m is None else "\n" + caret(pattern, m.start(), len(name))


def _check_name(pattern, name, pos):
    if name.isdecimal():
        if int(name) == 1:
            return
        _fail(pattern, pos, f"anonymous axis {name!r}: rearrange accepts only 1 as a number "
              f"(as einops); name the axis and give its size, e.g. 'k' with k={name}", len(name))
    if not name.isidentifier():
        _fail(pattern, pos, f"{name!r} is not an axis name (a Python identifier)", len(name))
    if name[0] == "_" or name[-1] == "_":
        _fail(pattern, pos, f"axis name {name!r} must not start or end with '_' (as in einops)",
              len(name))
    if keyword.iskeyword(name):
        _fail(pattern, pos, f"axis name {name!r} is a Python keyword and cannot be given as "
              f"a size keyword", len(name))


def _parse_side(pattern, start, end, left):
    groups, seen = [], {}
    group = None          # tokens of the open parenthesis, with its position
    i = start
    while i < end:
        ch = pattern[i]
        if ch == " ":
            i += 1
        elif ch == "(":
            if group is not None:
                _fail(pattern, i, "nested parentheses; a group is one level deep")
            group = ([], i)
            i += 1
        elif ch == ")":
            if group is None:
                _fail(pattern, i, "')' closes no group")
            groups.append((tuple(group[0]), group[1], True))
            group = None
            i += 1
        elif ch == ".":
            if pattern[i:i + 3] != ELLIPSIS:
                _fail(pattern, i, "a dot outside '...'")
            if ELLIPSIS in seen:
                _fail(pattern, i, "a second '...' on one side", 3)
            if group is not None and left:
                _fail(pattern, i, "'...' inside parentheses on the input side", 3)
            seen[ELLIPSIS] = i
            tok = _Tok(ELLIPSIS, i)
            if group is None:
                groups.append(((tok,), i, False))
            else:
                group[0].append(tok)
            i += 3
        elif ch.isalnum() or ch == "_":
            j = i
            while j < end and (pattern[j].isalnum() or pattern[j] == "_"):
                j += 1
            name = pattern[i:j]
            _check_name(pattern, name, i)
            if name != "1":
                if name in seen:
                    _fail(pattern, i, f"axis {name!r} appears twice on one side (first at "
                          f"column {seen[name]})", len(name))
                seen[name] = i
            tok = _Tok(name, i)
            if group is None:
                groups.append(((tok,) if name != "1" else (), i, False))
            elif name != "1":
                group[0].append(tok)
            i = j
        else:
            _fail(pattern, i, f"unexpected character {ch!r}; a pattern has axis names, "
                  f"'(', ')', '...' and spaces")
    if group is not None:
        _fail(pattern, group[1], "'(' is never closed")
    return _Side(tuple(groups), start, end), seen


@lru_cache(maxsize=256)
def _parse(pattern):
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern is a string such as 'n (c c16) h w -> n c h w c16', "
                        f"got {type(pattern).__name__}")
    arrow = pattern.find("->")
    if arrow < 0:
        raise RearrangeError(f"bad pattern {pattern!r}: no '->' between input and output\n"
                             f"{caret(pattern, len(pattern))}")
    again = pattern.find("->", arrow + 2)
    if again >= 0:
        _fail(pattern, again, "a second '->'", 2)
    left, lnames = _parse_side(pattern, 0, arrow, True)
    right, rnames = _parse_side(pattern, arrow + 2, len(pattern), False)
    if ELLIPSIS in rnames and ELLIPSIS not in lnames:
        _fail(pattern, rnames[ELLIPSIS], "'...' on the output side only", 3)
    for name, pos in lnames.items():
        if name not in rnames and name != ELLIPSIS:
            _fail(pattern, pos, f"axis {name!r} is on the input side only; rearrange keeps "
                  f"every axis", len(name))
    for name, pos in rnames.items():
        if name not in lnames:
            _fail(pattern, pos, f"axis {name!r} is on the output side only; rearrange keeps "
                  f"every axis", len(name))
    return left, right


class _Recipe(NamedTuple):
    """What a pattern means for one input shape: everything but strides and dtype."""
    mode: str            # "split" (logical dims = input groups) or "merge" (= output groups)
    logical: tuple       # logical dims
    # per logical dim: tuple of (digit position in `digits`, block, weight); block 0 = outer
    dim_digits: tuple
    digits: tuple        # (name, size) of each elementary axis, in output order
    in_digits: tuple     # per input axis: tuple of (digit index, size), outermost first
    out_shape: tuple     # the result's shape (output groups)
    padded: tuple        # per logical dim: True where the output has padding there
    in_order: dict       # digit index -> position among the input's digits


def _expand(side, ell):
    """Groups as tuples of names, with '...' replaced by `ell` (names of its axes)."""
    out = []
    for toks, pos, paren in side.groups:
        if len(toks) == 1 and toks[0].name == ELLIPSIS and not paren:
            out += [((n,), pos, False) for n in ell]
            continue
        names = []
        for t in toks:
            names += ell if t.name == ELLIPSIS else [t.name]
        out.append((tuple(names), pos, paren))
    return out


def _side_text(pattern, side):
    return pattern[side.pos:side.end].strip()


@lru_cache(maxsize=1024)
def _compile(pattern, shape, axes, dims):
    left, right = _parse(pattern)
    sizes = dict(axes)
    n_fixed = sum(1 for toks, _, paren in left.groups
                  if not (len(toks) == 1 and toks[0].name == ELLIPSIS and not paren))
    has_ell = any(t.name == ELLIPSIS for toks, _, _ in left.groups for t in toks)
    lpos = left.pos + len(pattern[left.pos:left.end]) - len(pattern[left.pos:left.end].lstrip())
    if (len(shape) < n_fixed) if has_ell else (len(shape) != n_fixed):
        _fail(pattern, lpos, f"the input side has {n_fixed}{' or more' if has_ell else ''} axes "
              f"but the array has {len(shape)} (shape {shape})",
              max(1, len(_side_text(pattern, left))))
    ell = tuple(f"...{i}" for i in range(len(shape) - n_fixed)) if has_ell else ()
    lgroups, rgroups = _expand(left, ell), _expand(right, ell)
    for name in sizes:
        if name not in {n for g, _, _ in lgroups for n in g}:
            raise RearrangeError(f"size keyword {name}={sizes[name]} names no axis of the "
                                 f"pattern {pattern!r}")
    # sizes of the digits: given, or inferred from the input axis they split
    pad_in = []
    for (names, pos, paren), n in zip(lgroups, shape):
        if not paren and names and names[0] in sizes and sizes[names[0]] != n:
            # a bare axis with a size keyword states its size, as in einops; pad in a group
            _fail(pattern, pos, f"{names[0]}={sizes[names[0]]} but the array's axis has {n}; "
                  f"write ({names[0]}) to pad it to {sizes[names[0]]}", len(names[0]))
        unknown = [a for a in names if a not in sizes]
        known = math.prod(sizes[a] for a in names if a in sizes)
        if len(unknown) > 1:
            _fail(pattern, pos, f"the group of axis {n} has {len(unknown)} axes of unknown size "
                  f"({', '.join(unknown)}); give all but one as keywords",
                  max(1, len(" ".join(names)) + 2))
        if unknown:
            if known == 0:
                if n:
                    _fail(pattern, pos, f"an axis of size {n} cannot split with a size-0 part")
                sizes[unknown[0]] = 0
            else:
                sizes[unknown[0]] = -(-n // known)
            known = math.prod(sizes[a] for a in names)
        if known < n or (not names and n != 1):
            _fail(pattern, pos, f"the input axis of size {n} does not fit "
                  + (f"{' * '.join(f'{a}={sizes[a]}' for a in names)} = {known}"
                     if names else "a unit axis"), max(1, len(" ".join(names)) + 2 * (len(names) > 1)))
        pad_in.append(known > n)
    digit_size = sizes
    out_shape = tuple(math.prod(digit_size[a] for a in names) for names, _, _ in rgroups)
    want = out_shape
    if dims is not None:
        want = tuple(dims)
        if len(want) != len(out_shape):
            raise RearrangeError(f"dims={want} has {len(want)} entries but the output side of "
                                 f"{pattern!r} has {len(out_shape)} axes")
        for (names, pos, _), full, n in zip(rgroups, out_shape, want):
            if not 0 <= n <= full:
                _fail(pattern, pos, f"dims asks for {n} here, but the group holds {full} "
                      f"positions; dims can only drop padding", max(1, len(" ".join(names))))
    crop = want != out_shape
    if crop and any(pad_in):
        j = pad_in.index(True)
        _fail(pattern, lgroups[j][1], "this group pads while dims= crops the output; "
              "do one in each call")
    order = [a for names, _, _ in rgroups for a in names]    # digits in output order
    index = {a: i for i, a in enumerate(order)}
    in_digits = tuple(tuple((index[a], digit_size[a]) for a in names) for names, _, _ in lgroups)
    groups = rgroups if crop else lgroups
    logical = want if crop else shape
    dim_digits = []
    for names, _, _ in groups:
        w, ax = 1, []
        for a in reversed(names):
            # a size-1 digit adds nothing, unless it is the dim's only one
            if digit_size[a] != 1 or len(names) == 1:
                ax.append((index[a], digit_size[a], w))
            w *= digit_size[a]
        dim_digits.append(tuple(reversed(ax)))
    in_order = {i: k for k, (i, _) in enumerate(d for digs in in_digits for d in digs)}
    padded = tuple(bool(p) for p in pad_in) if not crop else (False,) * len(logical)
    return _Recipe("merge" if crop else "split", tuple(logical), tuple(dim_digits),
                   tuple((a, digit_size[a]) for a in order), in_digits, want, padded, in_order)


def _digit_strides(digits):
    """C-contiguous strides of the output's digits, in elements."""
    strides, s = [0] * len(digits), 1
    for i in range(len(digits) - 1, -1, -1):
        strides[i] = s
        s *= digits[i][1]
    return strides


def _logical_axes(rec, strides_of_digit, position):
    """Desc axes of the logical dims, in memory order (`position` of each digit). A dim whose
    first digit holds ceil(size / rest) steps takes it as its outer axis, exactly as a tag
    does, so `(c c16)` gives the very Desc of nChw16c; otherwise (a group padded by more than
    one outer step) every digit is an inner block under an outer axis of extent 1."""
    keyed = []
    for d, ax in enumerate(rec.dim_digits):
        n = rec.logical[d]
        if not ax:                        # a unit dim with no digit of its own
            keyed.append((-1, Axis(d, 0, 1, n, 0)))
            continue
        (i0, b0, w0), rest = ax[0], ax[1:]
        if -(-n // w0) == b0:
            keyed.append((position(i0), Axis(d, 0, w0, b0, strides_of_digit(i0))))
        else:
            keyed.append((position(i0) - 0.5, Axis(d, 0, b0 * w0, 1, 0)))
            rest = ax
        keyed += [(position(i), Axis(d, b, w, b, strides_of_digit(i))) for i, b, w in rest]
    keyed.sort(key=lambda k: k[0])
    return [a for _, a in keyed]


class _Compiled(NamedTuple):
    plan: Any
    view_shape: Optional[tuple]     # "merge": shape, strides (bytes) of the source view
    view_strides: Optional[tuple]
    out_phys: tuple                 # the plan's output shape
    out_shape: tuple
    recipe: _Recipe


def _build(rec, arr):
    itemsize = arr.itemsize
    if any(s % itemsize for s in arr.strides):
        raise RearrangeError(f"array strides {arr.strides} are not multiples of the element "
                             f"size {itemsize}")
    dt = dtype_of_numpy(arr.dtype)
    if rec.mode == "split":
        src = Desc.of(arr, dtype=dt)
        dstr = _digit_strides(rec.digits)
        axes = _logical_axes(rec, lambda i: dstr[i], lambda i: i)
        dst = Desc._from_axes(rec.logical, dt, axes)
        return _Compiled(cached_plan(src, dst), None, None, dst.physical_shape, rec.out_shape, rec)
    # merge: the input's digits are the blocked side
    dstride = {}
    for (n, st), digs in zip(zip(arr.shape, arr.strides), rec.in_digits):
        s = st // itemsize
        for i, b in reversed(digs):
            dstride[i] = s
            s *= b
    axes = _logical_axes(rec, lambda i: dstride[i], rec.in_order.__getitem__)
    src = Desc._from_axes(rec.logical, dt, axes)
    dst = Desc(rec.logical, dt)
    return _Compiled(cached_plan(src, dst), src.physical_shape,
                     tuple(s * itemsize for s in src.physical_strides), dst.physical_shape,
                     rec.out_shape, rec)


def _fill_pad(rec, out_digits, value):
    """Write `value` over the padded positions of the output (digit view), dim by dim."""
    for d, padded in enumerate(rec.padded):
        if not padded:
            continue
        ax = rec.dim_digits[d]
        grids = np.meshgrid(*[np.arange(b) for _, b, _ in ax], indexing="ij")
        coord = sum(g * w for g, (_, _, w) in zip(grids, ax))
        hits = np.nonzero(coord >= rec.logical[d])
        index = [slice(None)] * out_digits.ndim
        for (i, _, _), h in zip(ax, hits):
            index[i] = h
        out_digits[tuple(index)] = value


def _pad_value(value, dtype):
    storage = dtype.storage
    if dtype.name == "bf16" and storage == np.uint16:
        f = np.array(value, np.float32)
        bits = int(f.view(np.uint32))
        if np.isnan(f):
            return np.uint16(0x7FC0)
        return np.uint16((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    if dtype.is_int:
        if isinstance(value, bool) or not float(value).is_integer():
            raise RearrangeError(f"pad={value!r} is not an integer, but the array is "
                                 f"{dtype.name}")
        info = np.iinfo(storage)
        if not info.min <= int(value) <= info.max:
            raise RearrangeError(f"pad={value!r} does not fit {dtype.name} "
                                 f"({info.min}..{info.max})")
        return storage.type(int(value))
    return np.array(value).astype(storage)


def rearrange(x: Any, pattern: str, *, pad: float = 0, dims: Optional[Sequence[int]] = None,
              out: Any = None, threads: Optional[int] = None, **axes: int) -> Any:
    """Rearrange `x` by an einops pattern; returns a new C-contiguous array (or `out`) of the
    same type as `x` (numpy, or torch and other DLPack producers, zero-copy).

        rearrange(x, "n c h w -> n h w c")                          # nchw -> nhwc
        rearrange(x, "n (c c16) h w -> n c h w c16", c16=16)        # nchw -> nChw16c
        rearrange(y, "n c h w c16 -> n (c c16) h w", dims=x.shape)  # and back, padding dropped

    The grammar is einops': axis names, groups in parentheses, `1` or `()` for unit axes and
    one `...`. Every axis must appear on both sides. Beyond einops, a group whose size does
    not divide pads: `(c c16)` over 30 channels with c16=16 gives c = 2 and 2 padded rows
    valued `pad` (0 by default, as in blocked tags). `dims=` is the result's shape when it is
    smaller than the groups: it drops padding in the inverse pattern.

    x        array: numpy, anything with __array__, or a CPU __dlpack__ tensor (any dtype,
             bf16 and f8 included: elements move as bytes)
    pattern  'input axes -> output axes'
    axes     sizes of split axes, e.g. c16=16 (integers)
    pad      value of padded positions
    dims     the result's shape, to drop padding (the inverse of a padded split)
    out      preallocated result: C-contiguous, the result's shape and dtype
    threads  thread count for this call

    The pattern compiles once per (pattern, shape, strides, dtype, sizes) to a cached plan,
    the same plans `reorder()` runs. Errors quote the pattern with a caret.
    """
    arr, like = read_words(x)
    kind = arr.dtype
    if kind not in _KNOWN:
        # bool, complex64 and other types of 1, 2, 4 or 8 bytes move as unsigned words
        arr = _as_words(arr)
    key: Optional[tuple] = (pattern, arr.shape, arr.strides, arr.dtype, tuple(axes.items()),
           None if dims is None else tuple(dims))
    comp = REARRANGE_CALLS.get(key)     # None too for an unhashable keyword value, checked below
    if comp is None:
        for name, v in axes.items():
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"axis size {name}={v!r} must be an integer"
                                + _point_at(pattern, name))
            if v < 0:
                raise RearrangeError(f"axis size {name}={v} is negative" + _point_at(pattern, name))
        if dims is not None:
            try:
                dims = tuple(int(d) for d in dims)
            except (TypeError, ValueError):
                raise TypeError(f"dims must be a sequence of integers, got {dims!r}") from None
        rec = _compile(pattern, arr.shape, tuple(sorted((k, int(v)) for k, v in axes.items())),
                       dims)
        if 0 in rec.out_shape or 0 in arr.shape:
            comp = _Compiled(None, None, None, rec.out_shape, rec.out_shape, rec)
        else:
            comp = _build(rec, arr)
        REARRANGE_CALLS.put(key, comp)
    if pad != 0 and like is not None and like.opaque:
        raise TypeError(f"pad={pad!r} for {like.dtype} elements needs a numpy type for them: "
                        f"pip install ml_dtypes")
    result = _run(comp, arr, pad, out, threads, kind)
    return wrap_like(like, result if result.dtype == kind else result.view(kind), out)


def _as_words(arr):
    if arr.itemsize not in (1, 2, 4, 8) or arr.dtype.hasobject:
        raise TypeError(f"rearrange moves elements of 1, 2, 4 or 8 bytes; got {arr.dtype}")
    return arr.view(f"u{arr.itemsize}")


_KNOWN = {np.dtype(t) for t in ("f4", "f8", "f2", "i1", "u1", "i2", "u2", "i4", "u4", "i8",
                                "u8")} | {as_dtype("bf16").storage}


def _run(comp, arr, pad, out, threads, kind):
    out_arr = None
    if out is not None:
        out_arr, _ = read_words(out, writable=True)
        if out_arr.dtype != kind:
            raise RearrangeError(f"out has dtype {out_arr.dtype}, but the input is {kind}")
        if out_arr.dtype != arr.dtype:
            out_arr = out_arr.view(arr.dtype)
        if out_arr.shape != comp.out_shape:
            raise RearrangeError(f"out has shape {out_arr.shape}, but the result is "
                                 f"{comp.out_shape}")
        if out_arr.dtype != arr.dtype:
            raise RearrangeError(f"out has dtype {out_arr.dtype}, but the input is {arr.dtype}")
        if not out_arr.flags.c_contiguous:
            raise RearrangeError("out must be C-contiguous")
    if comp.plan is None:           # a zero-size input or output: nothing to move
        if out_arr is not None:
            return out_arr
        return np.empty(comp.out_shape, arr.dtype)
    p = comp.plan
    src = arr
    if comp.view_shape is not None:
        src = np.lib.stride_tricks.as_strided(arr, comp.view_shape, comp.view_strides,
                                              writeable=False)
    if out_arr is not None:
        target = out_arr.reshape(comp.out_phys)     # a view: out is C-contiguous
        p(src, out=target, threads=threads)
        result = out_arr
    else:
        result = p(src, threads=threads).reshape(comp.out_shape)
    if pad != 0 and any(comp.recipe.padded):
        if kind == arr.dtype:
            value = _pad_value(pad, p.dst.dtype)
        else:                       # bool, complex64, f8 moved as words: pad in their type
            value = np.array(pad).astype(kind).view(arr.dtype)
        _fill_pad(comp.recipe, result.reshape([b for _, b in comp.recipe.digits]), value)
    return result
