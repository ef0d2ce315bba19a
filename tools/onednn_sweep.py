"""Measure the fallback tables of `reorder convert -t onednn-f32 / onednn-int8`: ask a real
oneDNN, limited to each ISA in a child process (ONEDNN_MAX_CPU_ISA), which weights layout it
wants for every layer of the sweep networks (network_shapes.SWEEP), and write the answers to
reorder/models/onednn_layouts.json, with the oneDNN version, the ISA of each row and the
agreement of the tables with the real query on the held-out networks' layers.

    python tools/onednn_sweep.py [--isa avx2 ...] [--onednn-lib PATH] [--out FILE]
    python tools/onednn_sweep.py --evaluate [--isa avx2] [--data FILE]   # agreement only, JSON

An ISA can only be swept on a machine that runs it (oneDNN's limit only lowers the ISA).
"""
import argparse
import importlib.metadata as md
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import network_shapes as N                                      # noqa: E402
from reorder.models import measured, presets                    # noqa: E402
from reorder.models.errors import ConvertError                  # noqa: E402
from reorder.models import onednn_runtime as R                  # noqa: E402
from reorder.models.query import swap_ab                        # noqa: E402
from reorder.models.roles import Role, View                     # noqa: E402

OUT = os.path.join(os.path.dirname(HERE), "reorder", "models", "onednn_layouts.json")
# (preset, source type): the sources the converter's presets run (nhwc, its default)
SOURCES = (("onednn-f32", "f32"), ("onednn-int8", "s8"), ("onednn-int8", "u8"))
_ABC = "abcdefghijkl"


def query(lib, layers, isa):
    got = R.query_with_isa(lib, layers, isa)
    if got is None:
        raise SystemExit(f"this machine runs {lib.isa}; oneDNN cannot be limited to {isa}")
    return got


def sweep(lib, isas):
    rows, refused = [], 0
    for isa in isas:
        for _, dt in SOURCES:
            nets = N.layers(N.SWEEP, dt)
            for (net, layer), r in zip(nets, query(lib, [l for _, l in nets], isa)):
                if isinstance(r, Exception):
                    refused += 1                  # no implementation: nothing to tabulate
                    continue
                rows.append({"isa": isa, "network": net, "kind": layer.kind,
                             "src_dims": list(layer.src_dims),
                             "weights_dims": list(layer.weights_dims),
                             "dst_dims": list(layer.dst_dims), "strides": list(layer.strides),
                             "pads": list(layer.pads), "dilations": list(layer.dilations),
                             "groups": layer.groups, "src_dtype": layer.src_dtype,
                             "src_layout": layer.src_layout, "tag": r.tag,
                             "implementation": r.implementation,
                             "compensation": list(r.compensation),
                             "scale_adjust": r.scale_adjust, "size": r.size,
                             "effective_isa": r.isa})
    return rows, refused


def role_view(layer):
    """The converter's Role and View of a layer's weight (as tasks builds them from a graph)."""
    w = tuple(layer.weights_dims)
    if layer.kind in ("conv", "deconv"):
        dw = layer.groups > 1 and w[1] == 1 and w[2] == 1
        return Role(layer.kind, groups=layer.groups), View(w, _ABC[:len(w)], w, dw)
    if layer.kind == "ip":                              # Gemm transB: stored (N, K)
        return Role("fc", trans=True), View((w[1], w[0]), "ba", w)
    return Role("fc"), View(w, "ab", w)


def table_answer(target, layer, tables):
    """What the tables write for `layer`, over oneDNN's weights dims: (tag, compensation,
    scale_adjust), or None when they refuse it."""
    role, view = role_view(layer)
    try:
        d = presets.decide(target, role, view, layer, tables=tables)
    except ConvertError:
        return None
    tag = d.tag if d.tag is not None else view.tag     # keep: as stored
    if layer.kind == "ip":
        tag = swap_ab(tag)
    if d.action == "quantize":
        return tag, tuple(d.compensation), d.scale_adjust
    return tag, (), 1.0


def answer_of(r):
    return r.tag, tuple(r.compensation), r.scale_adjust


def evaluate(lib, isas, tables):
    """Agreement of the rules and of the measured tables with the real query on the held-out
    layers that are not in the sweep: {isa: {preset source: {...}}}."""
    out = {}
    for isa in isas:
        per = out.setdefault(isa, {})
        for preset, dt in SOURCES:
            target = presets.make_target(preset, isa=isa, activations=dt)
            swept = {l for _, l in N.layers(N.SWEEP, dt)}
            held = [(net, l) for net, l in N.layers(N.HELD_OUT, dt) if l not in swept]
            got = query(lib, [l for _, l in held], isa)
            count = dict.fromkeys(("layers", "rules", "measured", "rules_tag", "measured_tag"),
                                  0)
            misses = {}
            for (net, layer), r in zip(held, got):
                if isinstance(r, Exception):
                    continue                      # oneDNN has no answer to agree with
                real = answer_of(r)
                count["layers"] += 1
                for name, tables_ in (("rules", False), ("measured", tables)):
                    t = table_answer(target, layer, tables_)
                    count[name] += t == real          # tag, compensation and scale_adjust
                    count[name + "_tag"] += t is not None and t[0] == real[0]
                    if name == "measured" and t != real:
                        misses[net] = misses.get(net, 0) + 1
            per[f"{preset} {dt}"] = dict(count, measured_misses_by_network=misses)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--isa", action="append", help="ISA to sweep (repeatable; default avx2)")
    ap.add_argument("--onednn-lib", help="libdnnl.so.3 (default: $ONEDNN_LIB or the wheel's)")
    ap.add_argument("--out", default=OUT, help="where to write the sweep")
    ap.add_argument("--evaluate", action="store_true",
                    help="print the held-out agreement of --data's tables as JSON; no sweep")
    ap.add_argument("--data", default=measured.DATA, help="the sweep --evaluate judges")
    a = ap.parse_args(argv)
    isas = a.isa or ["avx2"]
    lib = R.library(a.onednn_lib, required=True)
    if a.evaluate:
        m = measured.measurements(a.data)
        json.dump({"onednn": lib.version_str, "data_onednn": m.version,
                   "agreement": evaluate(lib, isas, m)}, sys.stdout, indent=1)
        print()
        return
    rows, refused = sweep(lib, isas)
    wheel = {d: md.version(d) for d in ("onednn-cpu-gomp", "onednn-cpu-iomp", "onednn-cpu-tbb",
                                        "onednn") if _installed(d)}
    data = {"about": "oneDNN's weights layouts for the layers of real networks: the measured "
                     "fallback tables of reorder convert -t onednn-f32 / onednn-int8 "
                     "(reorder/models/measured.py). Written by tools/onednn_sweep.py; "
                     "tags are over oneDNN's logical weights dims.",
            "onednn": {"version": lib.version_str, "hash": lib.hash, "packages": wheel},
            "isas": isas, "machine_isa": lib.isa, "cpu": _cpu_model(),
            "networks": sorted(N.SWEEP), "held_out_networks": sorted(N.HELD_OUT),
            "refused": refused, "rows": rows}
    m = measured.Measurements(data, a.out)
    data["held_out_agreement"] = evaluate(lib, isas, m)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(_dump(data))
    print(f"{len(rows)} rows ({refused} layers refused) from oneDNN {lib.version_str} at "
          f"{', '.join(isas)} -> {a.out}")
    print(json.dumps(data["held_out_agreement"], indent=1))


def _cpu_model():
    """The processor's name: oneDNN's blocking may depend on its caches, not only its ISA."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or "unknown"


def _installed(dist):
    try:
        md.distribution(dist)
        return True
    except md.PackageNotFoundError:
        return False


def _dump(data):
    """JSON with one row a line, so a new sweep's diff shows what oneDNN changed its mind on."""
    head = {k: v for k, v in data.items() if k != "rows"}
    text = json.dumps(head, indent=1)[:-2]
    rows = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in data["rows"])
    return f"{text},\n \"rows\": [\n  {rows}\n ]\n}}\n"


if __name__ == "__main__":
    main()
