"""Index maps: TVM's `transform_layout` functions of the logical indices, as layouts.

    IndexMap.from_func(lambda n, c, h, w: [n, c // 4, h, w, c % 4])      # = nChw4c
    IndexMap.from_func(lambda i, j, k: [i * 64 + j, k // 4, k % 4])     # a merge of i and j
    IndexMap.from_func(lambda n, c, h, w: [n, c // 4, h, AXIS_SEPARATOR, w, c % 4])   # 2-D

The function is traced once with symbolic indices. Each result is a sum of terms
`coef * digit`, where a digit is one slice of one index, `(v // weight) % extent` (the outer
slice has no extent). That is exactly a `Desc` axis (dim, weight, extent), so a map whose
digits tile every index compiles to a dense `Desc`: a (dim, block) map gives the very `Desc`
of the equivalent tag, and a merge `i * 64 + j` puts i's and j's axes next to each other.
A merge whose lower term is shorter than the gap above it (`i * 64 + j` with 50 j) pads that
index to the gap, as a block, so the padding is zero-filled like a blocked tag's.
"""
from __future__ import annotations

import inspect
import math
import operator
from typing import Callable, Optional, Sequence, Union

from .desc import Axis, Desc, _check_dims
from .errors import ReorderError
from .tags import parse_tag, spell

__all__ = ["AXIS_SEPARATOR", "IndexMap", "Padding", "as_index_map", "is_index_map"]


class _Separator:
    """The marker between the groups of output axes that form one physical axis each."""
    __slots__ = ()

    def __repr__(self):
        return "AXIS_SEPARATOR"

    def __reduce__(self):
        return "AXIS_SEPARATOR"


AXIS_SEPARATOR = _Separator()

_PREC = {"+": 1, "*": 2, "//": 2, "%": 2}


class Expr:
    """A traced index expression: a variable, an integer constant, or `a op b`."""
    __slots__ = ("op", "args")

    def __init__(self, op, args):
        self.op, self.args = op, args

    # -- building ---------------------------------------------------------------------------
    def __add__(self, other):
        return Expr("+", (self, _operand(other, self, "+")))

    def __radd__(self, other):
        return Expr("+", (_operand(other, self, "+"), self))

    def __mul__(self, other):
        return _mul(self, other, False)

    def __rmul__(self, other):
        return _mul(self, other, True)

    def __floordiv__(self, other):
        return Expr("//", (self, _divisor(self, other, "//")))

    def __mod__(self, other):
        return Expr("%", (self, _divisor(self, other, "%")))

    def __rfloordiv__(self, other):
        raise ReorderError(f"`{other!r} // {self}` divides by an index; an index map divides "
                           f"indices by positive constants only")

    def __rmod__(self, other):
        raise ReorderError(f"`{other!r} % {self}` takes a remainder by an index; an index map "
                           f"takes remainders by positive constants only")

    def _unsupported(self, text):
        raise ReorderError(f"`{text}`: an index map is built from indices with +, * by a "
                           f"constant, // and % by a positive constant")

    def __sub__(self, other):
        self._unsupported(f"{self} - {other!r}")

    def __rsub__(self, other):
        self._unsupported(f"{other!r} - {self}")

    def __neg__(self):
        self._unsupported(f"-{self}")

    def __truediv__(self, other):
        raise ReorderError(f"`{self} / {other!r}` is a true division; use // for an index map")

    def __rtruediv__(self, other):
        raise ReorderError(f"`{other!r} / {self}` is a true division; use // for an index map")

    def __pow__(self, other):
        self._unsupported(f"{self} ** {other!r}")

    def __bool__(self):
        raise ReorderError(f"`{self}` was used as a condition; an index map cannot branch on an "
                           f"index (no if, min or max)")

    def __index__(self):
        raise ReorderError(f"`{self}` was used as a Python integer; an index map sees symbolic "
                           f"indices, not values")

    # -- reading ----------------------------------------------------------------------------
    def __repr__(self):
        if self.op == "var":
            return self.args[0]
        if self.op == "const":
            return str(self.args[0])
        a, b = self.args
        p = _PREC[self.op]
        left = f"({a})" if a.op in _PREC and _PREC[a.op] < p else str(a)
        right = f"({b})" if b.op in _PREC and _PREC[b.op] <= p else str(b)
        return f"{left} {self.op} {right}"

    def evaluate(self, idx):
        """The value at integer (or numpy integer array) indices `idx`, by position."""
        if self.op == "var":
            return idx[self.args[1]]
        if self.op == "const":
            return self.args[0]
        a, b = (e.evaluate(idx) for e in self.args)
        if self.op == "+":
            return a + b
        if self.op == "*":
            return a * b
        return a // b if self.op == "//" else a % b

    def _key(self):
        # by position, not name: lambda a, b: [b, a] equals lambda x, y: [y, x]
        if self.op == "var":
            return ("var", self.args[1])
        if self.op == "const":
            return ("const", self.args[0])
        return (self.op,) + tuple(e._key() for e in self.args)


def _var(name, pos):
    return Expr("var", (name, pos))


def _const(value):
    return Expr("const", (value,))


def _int(value):
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _operand(other, expr, op):
    if isinstance(other, Expr):
        return other
    v = _int(other)
    if v is None:
        raise TypeError(f"`{expr} {op} {other!r}`: an index map combines indices with integers, "
                        f"not {type(other).__name__}")
    return _const(v)


def _mul(expr, other, right):
    if isinstance(other, Expr):
        a, b = (other, expr) if right else (expr, other)
        raise ReorderError(f"`{a} * {b}` multiplies two index expressions; a factor must be a "
                           f"constant")
    c = _operand(other, expr, "*")
    return Expr("*", (c, expr) if right else (expr, c))


def _divisor(expr, other, op):
    if isinstance(other, Expr):
        raise ReorderError(f"`{expr} {op} {other}` divides by an index; only positive constant "
                           f"divisors are allowed")
    v = _int(other)
    if v is None:
        raise TypeError(f"`{expr} {op} {other!r}`: the divisor must be an integer, not "
                        f"{type(other).__name__}")
    if v <= 0:
        raise ReorderError(f"`{expr} {op} {v}`: the divisor must be a positive constant")
    return _const(v)


# ---------------------------------------------------------------------------------------------
# normal form: each result is a sum of (coef, digit); digit = (index, weight, extent or None)

def _digit_text(names, digit):
    v, w, e = digit
    s = names[v] if w == 1 else f"{names[v]} // {w}"
    return s if e is None else f"{s} % {e}"


def _normal(expr, names):
    """(terms, constant) of `expr`: terms a list of (coef, digit)."""
    op = expr.op
    if op == "var":
        return [(1, (expr.args[1], 1, None))], 0
    if op == "const":
        return [], expr.args[0]
    a, b = expr.args
    if op == "+":
        ta, ca = _normal(a, names)
        tb, cb = _normal(b, names)
        return ta + tb, ca + cb
    if op == "*":
        inner, k = (b, a.args[0]) if a.op == "const" else (a, b.args[0])
        t, c = _normal(inner, names)
        return [(coef * k, d) for coef, d in t], c * k
    d = b.args[0]
    t, c = _normal(a, names)
    if c:
        raise ReorderError(f"`{expr}` applies {op} to an index plus a constant; an index map "
                           f"here starts every index at 0")
    if len(t) != 1:
        used = sorted({names[dg[0]] for _, dg in t})
        raise ReorderError(f"`{expr}` applies {op} to a sum of several terms "
                           f"({', '.join(used)}); split each index on its own, e.g. "
                           f"`i * 16 + j // 4` rather than `(i * 64 + j) // 4`")
    (k, (v, w, e)), = t
    if d == 1:
        return t, 0
    if op == "//":
        if k % d == 0:
            return [(k // d, (v, w, e))], 0
        if d % k == 0:
            q = d // k
            if e is None:
                return [(1, (v, w * q, None))], 0
            if e % q == 0 and e // q > 1:
                return [(1, (v, w * q, e // q))], 0
        raise ReorderError(f"`{expr}` does not split {names[v]} into whole digits ({op} {d} of "
                           f"{_coef_text(k, (v, w, e), names)}); an index map here splits an "
                           f"index by divisors of its blocks")
    if m := (d // k if d % k == 0 else 0):
        if m > 1 and (e is None or e % m == 0):
            return [(k, (v, w, m))], 0
    raise ReorderError(f"`{expr}` does not keep whole digits of {names[v]} "
                       f"({_coef_text(k, (v, w, e), names)} % {d}); an index map here takes "
                       f"remainders by divisors of the index's blocks")


def _coef_text(k, digit, names):
    s = _digit_text(names, digit)
    if k == 1:
        return s
    return f"({s}) * {k}" if "%" in s or "//" in s else f"{s} * {k}"


def _sum_text(terms, names):
    return " + ".join(_coef_text(k, d, names) for k, d in terms)


# ---------------------------------------------------------------------------------------------

class Padding:
    """The output coordinates of a map that no input index reaches (TVM's padding predicate):
    true where some index, recovered by the inverse map, is at or past its size."""
    __slots__ = ("conditions",)

    def __init__(self, conditions):
        self.conditions = tuple(conditions)     # (Expr over output indices, size)

    def __bool__(self):
        return bool(self.conditions)

    def __call__(self, *idx):
        if len(idx) == 1 and isinstance(idx[0], (tuple, list)):
            idx = tuple(idx[0])
        return any(e.evaluate(idx) >= n for e, n in self.conditions)

    def mask(self, shape):
        """A numpy bool array of `shape` (the map's output shape), True on padding."""
        import numpy as np
        grids = np.ogrid[tuple(slice(0, n) for n in shape)] if shape else []
        out = np.zeros(tuple(shape), dtype=bool)
        for e, n in self.conditions:
            out |= np.broadcast_to(e.evaluate(grids) >= n, out.shape)
        return out

    def __repr__(self):
        return " or ".join(f"{e} >= {n}" for e, n in self.conditions) or "False"


class _Layout:
    """A map applied to one shape: the destination's physical axes, the output shape, and
    where the padding is."""
    __slots__ = ("axes", "out_shape", "groups", "pad_dims", "chains")

    def __init__(self, axes, out_shape, groups, pad_dims, chains):
        self.axes = axes            # [(dim, block, weight, extent)] outermost first
        self.out_shape = out_shape  # the map's output shape (each output axis)
        self.groups = groups        # physical axes per output axis
        self.pad_dims = pad_dims
        self.chains = chains        # per output axis: [(coef, digit, padded extent, free)]


class IndexMap:
    """A layout written as a function of the logical indices, TVM's `IndexMap`.

    IndexMap.from_func(fn, ndim=None)   trace fn (one symbolic index per parameter)
    m.map_shape(shape)    output shape (non-dividing splits and merges round up)
    m.map_indices(idx)    output index of input index idx
    m.physical_shape(shape)  the output shape with each separator group flattened
    m.inverse(shape)      the inverse IndexMap; `.padding` says which outputs have no input
    m.non_surjective_inverse(shape)  (inverse, padding), as TVM spells it
    m.desc(dims, dtype)   the destination Desc (dense; the same Desc as an equivalent tag)
    """
    __slots__ = ("initial_indices", "final_indices", "axis_separators", "padding", "_norm",
                 "_hash")

    def __init__(self, initial_indices, final_indices, axis_separators=(), padding=None,
                 _check=True):
        self.initial_indices = tuple(initial_indices)
        self.final_indices = tuple(final_indices)
        self.axis_separators = tuple(axis_separators)
        self.padding = padding
        self._norm = self._normalise() if _check else None
        self._hash = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_func(cls, fn: Callable, ndim: Optional[int] = None) -> IndexMap:
        """Trace `fn` with one symbolic index per positional (then keyword-only) parameter;
        `ndim=` gives the count for a `*args` function. The result is a list (or one
        expression) of indices combined with +, * by constants, // and % by positive
        constants, with AXIS_SEPARATOR between physical axes."""
        if isinstance(fn, IndexMap):
            return fn
        if not callable(fn):
            raise TypeError(f"an index map is a function of the indices, got "
                            f"{type(fn).__name__}")
        names, kw, star = _code_params(fn)
        if names is None:           # a builtin, a partial, a callable object: the slow way
            names, kw, star = [], [], False
            for p in _signature(fn):
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    names.append(p.name)
                elif p.kind == p.KEYWORD_ONLY:
                    kw.append(p.name)
                elif p.kind == p.VAR_POSITIONAL:
                    star = True
                else:
                    raise ReorderError(f"an index map function cannot take **{p.name}")
        if star:
            if ndim is None:
                raise ReorderError("a *args index map function needs ndim= (the number of "
                                   "indices)")
            if ndim < len(names) + len(kw):
                raise ReorderError(f"ndim={ndim} is less than the function's "
                                   f"{len(names) + len(kw)} named parameters")
        elif ndim is not None and ndim != len(names) + len(kw):
            raise ReorderError(f"ndim={ndim} but the function takes {len(names) + len(kw)} "
                               f"indices")
        nstar = (ndim - len(names) - len(kw)) if star else 0
        taken = set(names) | set(kw)
        extra = []
        i = 0
        while len(extra) < nstar:
            if f"i{i}" not in taken:
                extra.append(f"i{i}")
            i += 1
        pos = names + extra
        allnames = pos + kw
        vars_ = [_var(n, k) for k, n in enumerate(allnames)]
        result = fn(*vars_[:len(pos)], **{n: v for n, v in zip(kw, vars_[len(pos):])})
        if isinstance(result, (Expr, _Separator)) or not isinstance(result, (list, tuple)):
            result = [result]
        return cls._from_result(allnames, list(result))

    @classmethod
    def _from_result(cls, names, result):
        def text():
            return "[" + ", ".join(repr(r) for r in result) + "]"
        finals, seps = [], []
        for k, r in enumerate(result):
            if r is AXIS_SEPARATOR:
                if k == 0 or k == len(result) - 1:
                    raise ReorderError(f"AXIS_SEPARATOR at the {'start' if k == 0 else 'end'} "
                                       f"of {text()}; a separator goes between output axes")
                if result[k - 1] is AXIS_SEPARATOR:
                    raise ReorderError(f"AXIS_SEPARATOR twice in a row in {text()}; each physical "
                                       f"axis needs at least one output axis")
                seps.append(len(finals))
                continue
            if isinstance(r, Expr):
                finals.append(r)
                continue
            v = _int(r)
            if v is None:
                raise TypeError(f"output {len(finals)} of {text()} is a {type(r).__name__}, not "
                                f"an index expression")
            finals.append(_const(v))
        if not finals:
            raise ReorderError("an index map needs at least one output index")
        return cls(names, finals, seps)

    def _normalise(self):
        names = self.initial_indices
        outs = []
        for e in self.final_indices:
            terms, c = _normal(e, names)
            if c:
                raise ReorderError(f"`{e}` adds the constant {c}; an index map here is a layout, "
                                   f"its indices start at 0")
            if not terms:
                raise ReorderError(f"output `{e}` is a constant; every output of an index map "
                                   f"here depends on an index")
            merged = {}
            for k, d in terms:
                merged[d] = merged.get(d, 0) + k
            outs.append(tuple(sorted(((k, d) for d, k in merged.items()),
                                     key=lambda t: (-t[0], t[1][0], -t[1][1]))))
        # each index's digits must tile it: weight 1 upward, one outer digit on top
        digits = {v: [] for v in range(len(names))}
        for o, terms in enumerate(outs):
            for k, d in terms:
                digits[d[0]].append((d, o))
        for v, ds in digits.items():
            if not ds:
                raise ReorderError(f"index {names[v]} does not appear in {self!r}; the map is "
                                   f"not injective")
        for v, ds in digits.items():
            n = names[v]
            ds.sort(key=lambda t: (t[0][1], t[0][2] is None))
            w = 1
            for k, ((_, dw, de), o) in enumerate(ds):
                if dw == w and (de is not None or k == len(ds) - 1):
                    w = None if de is None else dw * de     # the common case: it tiles
                    continue
                text = _digit_text(names, (v, dw, de))
                if dw < w:
                    raise ReorderError(f"`{text}` repeats digits of {n} that "
                                       f"`{_digit_text(names, ds[k - 1][0])}` already uses; the "
                                       f"map is not injective")
                if dw > w and k:
                    prev = _digit_text(names, ds[k - 1][0])
                    raise ReorderError(f"`{text}` does not follow `{prev}`, whose digits end at "
                                       f"weight {w}: the map loses part of {n} and is not "
                                       f"injective")
                if dw > w:
                    missing = _digit_text(names, (v, w, dw // w if dw % w == 0 else None))
                    raise ReorderError(f"`{text}` without `{missing}`: the map loses part of {n} "
                                       f"and is not injective")
                if de is None:
                    if k != len(ds) - 1:
                        raise ReorderError(f"`{text}` repeats digits of {n} that "
                                           f"`{_digit_text(names, ds[k + 1][0])}` also uses; the "
                                           f"map is not injective")
                    w = None
                else:
                    w = dw * de
            if w is not None:
                raise ReorderError(f"`{_digit_text(names, ds[-1][0])}` without "
                                   f"`{_digit_text(names, (v, w, None))}`: the map keeps only "
                                   f"part of {n} and is not injective")
        return tuple(outs)

    # -- identity -----------------------------------------------------------------------------
    def _key(self):
        body = self._norm if self._norm is not None else tuple(e._key() for e in self.final_indices)
        return (len(self.initial_indices), body, self.axis_separators)

    def __eq__(self, other):
        return isinstance(other, IndexMap) and self._key() == other._key()

    def __hash__(self):
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(self._key()))
        return self._hash

    def __repr__(self):
        parts = [repr(e) for e in self.final_indices]
        for k in reversed(self.axis_separators):
            parts.insert(k, "AXIS_SEPARATOR")
        return f"lambda {', '.join(self.initial_indices)}: [{', '.join(parts)}]"

    def without_separators(self) -> IndexMap:
        """The same map with every output axis its own physical axis."""
        return IndexMap(self.initial_indices, self.final_indices)

    @property
    def ndim(self) -> int:
        return len(self.initial_indices)

    @property
    def out_ndim(self) -> int:
        return len(self.final_indices)

    # -- evaluation ---------------------------------------------------------------------------
    def _check_rank(self, what, seq):
        seq = tuple(seq)
        if len(seq) != self.ndim:
            raise ReorderError(f"{what} {seq} has {len(seq)} entries but {self!r} takes "
                               f"{self.ndim} indices")
        return seq

    def map_indices(self, idx: Sequence[int]) -> list:
        """The output index of input index `idx` (integers, or numpy integer arrays)."""
        idx = self._check_rank("index", idx)
        return [e.evaluate(idx) for e in self.final_indices]

    def __call__(self, *idx):
        return self.map_indices(idx)

    def _shape(self, shape):
        shape = self._check_rank("shape", shape)
        try:
            shape = tuple(operator.index(n) for n in shape)
        except TypeError:
            raise TypeError(f"a shape is a sequence of integers, got {shape!r}") from None
        if any(n < 0 for n in shape):
            raise ReorderError(f"shape {shape} has a negative size")
        return shape

    def layout(self, shape: Sequence[int]) -> _Layout:
        """The map applied to `shape`: the destination's physical axes, output shape and padding.
        Raises ReorderError where the map is not a layout of that shape."""
        shape = self._shape(shape)
        if self._norm is None:
            self._norm = self._normalise()
        names = self.initial_indices
        axes, out_shape, groups, chains = [], [], [], []
        for o, terms in enumerate(self._norm):
            ext = [e if e is not None else -(-shape[v] // w) for _, (v, w, e) in terms]
            padded = list(ext)
            free = [False] * len(terms)
            m = len(terms) - 1
            if terms[m][0] != 1:
                raise ReorderError(f"`{self.final_indices[o]}` multiplies its lowest term by "
                                   f"{terms[m][0]}, which leaves gaps in the output; an index "
                                   f"map here is a dense layout")
            reach, low = ext[m], m
            for k in range(m - 1, -1, -1):
                need = terms[k][0]
                lc = terms[low][0]
                if need == reach:
                    pass
                elif need > reach:
                    le = terms[low][1][2]
                    if le is not None or need % lc:
                        raise ReorderError(
                            f"`{_coef_text(need, terms[k][1], names)}` and "
                            f"`{_coef_text(lc, terms[low][1], names)}` in "
                            f"`{self.final_indices[o]}` leave gaps for shape {shape}: "
                            f"{_digit_text(names, terms[low][1])} spans {reach // lc}, the step "
                            f"above it is {need}")
                    padded[low] = need // lc
                elif ext[k] <= 1:
                    free[k] = True          # its digit is always 0: it takes no room
                    continue
                else:
                    raise ReorderError(
                        f"`{self.final_indices[o]}` is not injective for shape {shape}: "
                        f"{_digit_text(names, terms[low][1])} spans {reach // lc} steps of "
                        f"{lc}, more than the {need // lc} left below "
                        f"`{_coef_text(need, terms[k][1], names)}`")
                reach, low = need * ext[k], k
            out_shape.append(reach)
            chains.append([(c, d, p, f) for (c, d), p, f in zip(terms, padded, free)])
            group = []
            for (c, (v, w, e)), n, p in zip(terms, ext, padded):
                group.append(len(axes))
                if e is not None:
                    axes.append((v, e, w, e))
                elif p != n:
                    # an outer digit padded to the gap above it: a block of p, its outer of
                    # one step (or none for a zero-size index)
                    axes.append((v, 0, w * p, -(-shape[v] // (w * p))))
                    group.append(len(axes))
                    axes.append((v, p, w, p))
                else:
                    axes.append((v, 0, w, n))
            groups.append(tuple(group))
        pad_dims = []
        for v, n in enumerate(shape):
            total = math.prod(a[1] for a in axes if a[0] == v and a[1])
            if -(-n // total) * total > n:
                pad_dims.append(v)
        return _Layout(tuple(axes), tuple(out_shape), tuple(groups),
                       tuple(pad_dims), chains)

    def map_shape(self, shape: Sequence[int]) -> list:
        """Output shape for input `shape`: a split that does not divide rounds up, and a merge
        `i * 64 + j` is 64 steps per i even when j is shorter (the padded layout)."""
        return list(self.layout(shape).out_shape)

    def physical_shape(self, shape: Sequence[int]) -> tuple:
        """map_shape with the axes of each separator group multiplied into one."""
        return _flatten(self.layout(shape).out_shape, self.axis_separators)

    def desc(self, dims: Sequence[int], dtype="f32") -> Desc:
        """The dense destination Desc for logical `dims`: dims stay the map's inputs, the
        axes follow the map. A (dim, block) map gives the Desc of the equivalent tag."""
        lay = self.layout(dims)
        return _dense_desc(tuple(dims), dtype, lay.axes)

    # -- inverse ------------------------------------------------------------------------------
    def non_surjective_inverse(self, shape: Sequence[int]):
        """(inverse IndexMap over the output indices axis0.., Padding), as TVM's
        IndexMap.non_surjective_inverse: the padding is true on outputs no input reaches."""
        shape = self._shape(shape)
        lay = self.layout(shape)
        outs = [_var(f"axis{k}", k) for k in range(self.out_ndim)]
        parts = {v: [] for v in range(self.ndim)}
        for o, chain in enumerate(lay.chains):
            live = [t for t in chain if not t[3]]
            for j, (c, (v, w, e), p, _) in enumerate(live):
                x = outs[o] if c == 1 else outs[o] // c
                if j:                       # the top digit of an axis needs no remainder
                    x = x % p
                parts[v].append((w, x))
        finals = []
        for v in range(self.ndim):
            terms = sorted(parts[v], key=lambda t: -t[0])
            e = None
            for w, x in terms:
                x = x if w == 1 else x * w
                e = x if e is None else e + x
            finals.append(e if e is not None else _const(0))
        inv = IndexMap([f"axis{k}" for k in range(self.out_ndim)], finals, (), None,
                       _check=False)
        pad = Padding((finals[v], shape[v]) for v in lay.pad_dims)
        inv.padding = pad
        return inv, pad

    def inverse(self, shape: Sequence[int]) -> IndexMap:
        """The inverse map over the output indices; its `.padding` (a Padding, false for a
        bijective map) says which outputs no input reaches."""
        return self.non_surjective_inverse(shape)[0]


_VARARGS, _VARKW = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def _code_params(fn):
    """(positional names, keyword-only names, *args?) read from a plain function's code, or
    (None, None, None) for other callables (inspect.signature reads those, more slowly)."""
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        return None, None, None
    if code.co_flags & _VARKW:
        raise ReorderError("an index map function cannot take **kwargs")
    n, k = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[:n + k])
    return names[:n], names[n:], bool(code.co_flags & _VARARGS)


def _signature(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise TypeError(f"cannot read the parameters of {fn!r}") from None


def _flatten(shape, seps):
    cuts = (0,) + tuple(seps) + (len(shape),)
    return tuple(math.prod(shape[a:b]) for a, b in zip(cuts, cuts[1:]))


def _dense_desc(dims, dtype, axes):
    """Dense, C-contiguous axes in the given order, strides as a tag-built Desc has them."""
    dims = _check_dims(dims)
    out = []
    stride = 1
    for d, b, w, n in reversed(axes):
        out.append(Axis(d, b, w, n, stride))
        stride *= n if n else 1         # a zero-size axis leaves the running stride as is
    out = tuple(reversed(out))
    tag = None
    order = tuple((d, b) for d, b, _, _ in axes)
    try:
        tag = parse_tag(spell(len(dims), order), len(dims))
        if Desc(dims, dtype, tag).axes != out:
            tag = None
    except ReorderError:
        tag = None
    if tag is not None:
        return Desc(dims, dtype, tag)
    return Desc._from_axes(dims, dtype, out, 0, None)


def as_index_map(m: Union[IndexMap, Callable], ndim: Optional[int] = None) -> IndexMap:
    """`m` if it is an IndexMap, else the trace of function `m` (each call traces anew, so a
    closure over a changed value gives its new map)."""
    if isinstance(m, IndexMap):
        return m
    return IndexMap.from_func(m, ndim)


def is_index_map(obj) -> bool:
    """True when a layout argument is an index map: an `IndexMap`, or any other callable that
    is not a str or a `Desc` (a function of the logical indices, traced when it is used).
    Tags, Descs and the OpenCL image kinds (named tuples) are never callable, so they answer
    False."""
    return isinstance(obj, IndexMap) or (callable(obj) and not isinstance(obj, (str, Desc)))
