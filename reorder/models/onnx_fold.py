"""Constant shape-only ops on ONNX initializers, folded the way a runtime folds them.

A weight often reaches its Conv / Gemm through ops that change only its shape or its axis
order: GoogLeNet's classifier weight [1, 1, 1000, 1024] goes through a Reshape with a constant
shape into a Gemm. Runtimes fold such ops before they look at the weight, so the converter does
too: the tensor written is the folded one, with the role of the op that consumes it.

Folded, with ONNX's semantics: Reshape with a constant shape (an initializer, a Constant node or,
before opset 5, the `shape` attribute; 0 copies the input dim unless allowzero=1, -1 is
inferred), Flatten (`axis`), Squeeze / Unsqueeze (`axes` as the attribute of opsets < 13 or the
second input of opsets >= 13), Transpose (`perm`, reversed by default) and Identity, in chains.

Naming: the folded tensor keeps the initializer's name (with the folded shape), which is what a
loader that maps initializers by name looks up. When one initializer feeds chains that end in
different tensors (another shape or axis order, or the initializer is also read as stored),
one name cannot hold them all: each chain's result is then named by the tensor its consumer
reads (the last folded op's output), and the initializer's own name holds it as stored only if
something reads it so. The metadata of a folded tensor names the initializer and the ops.
"""
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

FOLDABLE = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity")
_MAX_PARAM = 64               # elements of a shape / axes constant read at planning time


@dataclass(frozen=True)
class Step:
    label: str                # "Reshape 'r'", for the metadata and messages
    shape: tuple              # after the op
    perm: tuple = None        # Transpose: the axes; None: the data order is unchanged


@dataclass
class End:
    """A tensor reached from an initializer through folded ops (none: the initializer itself)
    that something reads."""
    name: str
    start: tuple              # the initializer's shape
    shape: tuple
    steps: tuple
    uses: list                # (node, input index) of the ops that read it, not folded
    output: bool = False      # a graph output

    def key(self):
        """What the data is: the same key, the same bytes in the same order."""
        return self.shape, canonical(self.steps, self.start)

    def as_stored(self):
        return self.key() == (self.start, ())


def canonical(steps, start):
    """The steps that move data, from a tensor of shape `start`: a run of shape-only ops is
    one reshape (none if it ends in the shape it began with), transposes in a row are one."""
    out = []                                     # [kind, arg, shape before]
    shape = tuple(start)
    for s in steps:
        if s.perm is not None:
            if out and out[-1][0] == "transpose":
                out[-1][1] = tuple(out[-1][1][p] for p in s.perm)
            else:
                out.append(["transpose", s.perm, shape])
        elif out and out[-1][0] == "reshape":
            out[-1][1] = s.shape
        else:
            out.append(["reshape", s.shape, shape])
        shape = s.shape
        if out[-1][1] == (out[-1][2] if out[-1][0] == "reshape" else tuple(range(len(shape)))):
            out.pop()                            # back where the run began: no step
    return tuple((kind, arg) for kind, arg, _ in out)


def apply(a, steps):
    """The folded array: reshapes are views; a Transpose makes one contiguous copy at the end."""
    moved = False
    for kind, arg in canonical(steps, a.shape):
        if kind == "reshape":
            a = a.reshape(arg)
        else:
            a = a.transpose(arg)
            moved = True
    return np.ascontiguousarray(a) if moved else a


def moves_data(steps, start):
    return any(kind == "transpose" for kind, _ in canonical(steps, start))


class Constants:
    """Values of the small integer constants that parametrize the folded ops: initializers
    (read now, through their loaders) and Constant nodes."""

    def __init__(self, graph, loaders, numpy_helper):
        self.loaders = loaders                   # name -> (shape, loader) of the initializers
        self.nodes = {}
        for node in graph.node:
            if node.op_type == "Constant" and len(node.output) == 1:
                self.nodes[node.output[0]] = node
        self.numpy_helper = numpy_helper

    def get(self, name):
        """(int64 values, None) or (None, why it is not a constant)."""
        if name in self.loaders:
            shape, load = self.loaders[name]
            if int(np.prod(shape, dtype=np.int64)) > _MAX_PARAM:
                return None, f"its input {name!r} has {int(np.prod(shape))} values"
            a = np.asarray(load())
        elif name in self.nodes:
            a = None
            for at in self.nodes[name].attribute:
                if at.name == "value":
                    a = self.numpy_helper.to_array(at.t)
                elif at.name == "value_ints":
                    a = np.array(list(at.ints), np.int64)
                elif at.name == "value_int":
                    a = np.array(at.i, np.int64)
            if a is None:
                return None, f"its input {name!r} is a Constant without integer values"
        else:
            return None, f"its input {name!r} is not a constant"
        if a.dtype.kind != "i":                  # ONNX: int64 (bool, bf16 words: no)
            return None, f"its input {name!r} holds {a.dtype}, not integers"
        return a.astype(np.int64).reshape(-1), None


def _label(node):
    return f"{node.op_type} {node.name or '(unnamed)'!r}"


def _ints(node, name):
    for a in node.attribute:
        if a.name == name:
            return [int(v) for v in a.ints]
    return None


def _int(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _axes(node, consts):
    """(axes or None, why not): the attribute (opsets < 13) or the second input (>= 13)."""
    axes = _ints(node, "axes")
    if axes is not None:
        return axes, None
    if len(node.input) > 1 and node.input[1]:
        vals, why = consts.get(node.input[1])
        return (None, why) if vals is None else ([int(v) for v in vals], None)
    return None, None


def step(node, shape, consts):
    """(Step, None) for `node` applied to a tensor of `shape` at its input 0, or (None, why
    it cannot be folded)."""
    op, r, label = node.op_type, len(shape), _label(node)
    if op == "Identity":
        return Step(label, shape), None
    if op == "Transpose":
        perm = _ints(node, "perm")
        perm = list(range(r))[::-1] if perm is None else perm
        if sorted(perm) != list(range(r)):
            return None, f"perm {perm} is not a permutation of {r} axes"
        return Step(label, tuple(shape[p] for p in perm), tuple(perm)), None
    if op == "Flatten":
        axis = _int(node, "axis", 1)
        if not -r <= axis <= r:
            return None, f"axis {axis} is out of range for {r} dims"
        axis += r if axis < 0 else 0
        return Step(label, (_prod(shape[:axis]), _prod(shape[axis:]))), None
    if op == "Squeeze":
        axes, why = _axes(node, consts)
        if why:
            return None, why
        if axes is None:
            return Step(label, tuple(d for d in shape if d != 1)), None
        norm = _norm(axes, r)
        if norm is None:
            return None, f"axes {axes} are out of range or repeated for {r} dims"
        if any(shape[a] != 1 for a in norm):
            return None, f"axes {axes} name dims of shape {list(shape)} that are not 1"
        return Step(label, tuple(d for i, d in enumerate(shape) if i not in norm)), None
    if op == "Unsqueeze":
        axes, why = _axes(node, consts)
        if why:
            return None, why
        if axes is None:
            return None, "it has no axes"
        norm = _norm(axes, r + len(axes))
        if norm is None:
            return None, f"axes {axes} are out of range or repeated for {r + len(axes)} dims"
        it = iter(shape)
        return Step(label, tuple(1 if i in norm else next(it)
                                 for i in range(r + len(axes)))), None
    # Reshape: the `shape` attribute before opset 5, the second input since
    target = _ints(node, "shape")
    if target is None:
        if len(node.input) < 2 or not node.input[1]:
            return None, "it has no shape"
        vals, why = consts.get(node.input[1])
        if vals is None:
            return None, why
        target = [int(v) for v in vals]
    out, why = reshape_shape(shape, target, bool(_int(node, "allowzero", 0)))
    return (None, why) if out is None else (Step(label, out), None)


def reshape_shape(shape, target, allowzero=False):
    """(ONNX Reshape's output shape, None) or (None, why the shape does not fit)."""
    out, infer = [], None
    if allowzero and 0 in target and -1 in target:
        return None, f"shape {target} has both 0 and -1 with allowzero=1"
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= len(shape):
                return None, f"shape {target} copies dim {k}, which {list(shape)} does not have"
            out.append(shape[k])
        elif d == -1:
            if infer is not None:
                return None, f"shape {target} has more than one -1"
            infer = k
            out.append(1)
        elif d < 0:
            return None, f"shape {target} has the negative dim {d}"
        else:
            out.append(d)
    total = _prod(shape)
    if infer is not None:
        known = _prod(out)
        if known == 0 or total % known:
            return None, f"shape {target} cannot hold the {total} values of {list(shape)}"
        out[infer] = total // known
    if _prod(out) != total:
        zero = " (allowzero=1: a 0 is a zero-sized dim)" if allowzero and 0 in target else ""
        return None, f"shape {target} does not hold the {total} values of {list(shape)}{zero}"
    return tuple(out), None


def _norm(axes, r):
    norm = [a + r if a < 0 else a for a in axes]
    if any(not 0 <= a < r for a in norm) or len(set(norm)) != len(norm):
        return None
    return set(norm)


def _prod(dims):
    return int(np.prod(dims, dtype=np.int64))


def uses_of(graph):
    uses = defaultdict(list)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name:
                uses[name].append((node, i))
    return uses


def follow(name, shape, uses, outputs, consts, refused):
    """The Ends of initializer `name`: every tensor reached through folded ops that something
    reads, in graph order. `refused` collects {id(node): why} for ops that could not be folded."""
    ends = []

    def walk(t, shp, steps, seen):
        direct, folded = [], []
        for node, i in uses.get(t, ()):
            if node.op_type in FOLDABLE and i == 0 and len(node.output) == 1 \
                    and id(node) not in seen:
                s, why = step(node, shp, consts)
                if s is not None:
                    folded.append((node, s))
                    continue
                refused[id(node)] = why
            direct.append((node, i))
        if direct or t in outputs:
            ends.append(End(t, tuple(shape), tuple(shp), steps, direct, t in outputs))
        for node, s in folded:
            walk(node.output[0], s.shape, steps + (s,), seen | {id(node)})

    walk(name, tuple(shape), (), frozenset())
    if not ends:                                    # unused, or only dead chains: as stored
        ends.append(End(name, tuple(shape), tuple(shape), (), []))
    return ends


def group(name, ends):
    """[(output name, [Ends])]: Ends holding the same data share one output, named as the
    module docstring says."""
    groups = {}
    for e in ends:
        groups.setdefault(e.key(), []).append(e)
    if len(groups) == 1:
        return [(name, next(iter(groups.values())))]
    out = []
    for members in groups.values():
        out.append((name if members[0].as_stored() else members[0].name, members))
    return out
