"""The converter's side of asking oneDNN: for each Conv / ConvTranspose / Gemm / MatMul weight
of an ONNX model, the layer as the runtime creates it (onnx_layers) and oneDNN's answer
(onednn_runtime), or why the tables decide instead."""
import warnings
from dataclasses import dataclass

from .errors import ConvertError
from .measured import measurements


@dataclass(frozen=True)
class Answer:
    layer: object                 # onednn_runtime.Layer
    label: str                    # the node: "Conv 'stem'"
    layout: object = None         # onednn_runtime.WeightsLayout, or None: the tables decide
    error: str = None             # oneDNN refused the layer
    why_table: str = None         # why the tables decide


def _names(t):
    """Every name the graph may read tensor `t` by."""
    names = [t.name]
    if t.meta:
        names += list(t.meta.get("graph_names", ()))
    return names + list(t.aliases)


def answers(path, fmt, tensors, target):
    """{tensor name: Answer} for the weights oneDNN is asked about; {} when the target does
    not ask. Warns once, naming the table-based layers, when oneDNN cannot be asked."""
    if not target.asks_onednn or fmt != "onnx":
        return {}
    from . import onednn_runtime as R
    from .onnx_layers import layers
    found = layers(path, dict(target.input_shapes), target.src_dtype, target.src_layout)
    mine = {}
    for t in tensors:
        for n in _names(t):
            if n in found:
                mine[t.name] = found[n]
                break
    if not mine:
        return {}
    why = None
    try:
        lib = R.library(target.onednn_lib)
    except R.OnednnError as exc:
        raise ConvertError(f"{path}: {exc}") from None
    if lib is None:
        why = ("no oneDNN library found (pip install onednn-cpu-gomp, or give --onednn-lib "
               "PATH / ONEDNN_LIB)")
    elif target.isa_given and not R.isa_at_most(target.isa, lib.isa_value):
        why = (f"oneDNN can only be limited to an ISA this machine runs ({lib.isa}), not "
               f"{target.isa}")
    if why is not None:
        names = ", ".join(f"{label} ({name})" for name, (_, label, _) in mine.items())
        warnings.warn(f"{path}: weights layouts from the tables, not asked of oneDNN: {why}; "
                      f"{tables_source(target)}; table-based layers: {names}", stacklevel=4)
        return {name: Answer(layer, label, why_table=why)
                for name, (layer, label, _) in mine.items()}
    # layers whose shapes are unknown fail only if their layout is needed (tasks)
    out = {n: Answer(None, label, error=err) for n, (_, label, err) in mine.items() if err}
    mine = {n: (layer, label) for n, (layer, label, err) in mine.items() if not err}
    order = list(mine)
    got = R.query_layers([mine[n][0] for n in order], lib,
                         target.isa if target.isa_given else None)
    for name, r in zip(order, got):
        layer, label = mine[name]
        if isinstance(r, Exception):
            out[name] = Answer(layer, label, error=str(r))
        else:
            out[name] = Answer(layer, label, r)
    return out


def tables_source(target):
    """What the fallback tables for `target` are, for the warning."""
    m = measurements()
    if m.covers(target.isa, target.src_dtype, target.src_layout):
        return (f"the tables for {target.isa} are oneDNN {m.version}'s answers for the "
                f"nearest of the real networks' layers it was measured on")
    return (f"the tables for {target.isa} with a {target.src_dtype} {target.src_layout} source "
            f"are the hand-written rules, not measurements (measured: {', '.join(m.isas)} "
            f"with {', '.join(f'{d} {l}' for d, l in m.sources)} sources)")


def swap_ab(tag):
    """The tag over (K, N) of a layout oneDNN describes over (N, K): letters a and b swapped."""
    table = str.maketrans("abAB", "baBA")
    return tag.translate(table)
