"""`python -m reorder convert`: the command line of reorder.convert()."""

from .presets import ISAS


def add_parser(sub):
    p = sub.add_parser("convert", help="convert a model's weights for a runtime (.safetensors out)",
                       description="Convert the weights of ONNX / safetensors / npz / npy files "
                                   "into the layouts a runtime consumes, one .safetensors each.")
    p.add_argument("inputs", nargs="+", help=".onnx, .safetensors, .npz or .npy files")
    p.add_argument("-o", "--output", help="output file (one input)")
    p.add_argument("--out-dir", help="output directory: each input becomes <name>.safetensors")
    p.add_argument("-t", "--target", default="onednn-f32",
                   help="onednn-f32 (default), onednn-int8, onednn-int4, onednn-int4-asym, "
                        "onednn-f8, mace-gpu, mnn-gpu, tvm:LAYOUT or plain")
    p.add_argument("--isa", choices=ISAS,
                   help="limit the oneDNN asked to this ISA (ONEDNN_MAX_CPU_ISA); without "
                        "oneDNN, the tables' CPU (default avx512_core_vnni)")
    p.add_argument("--activations", choices=("s8", "u8", "f32", "bf16"),
                   help="the primitives' source type: onednn-int8 s8 (default; adds s8s8 "
                        "compensation) or u8; onednn-f32 f32 (default) or bf16")
    p.add_argument("--src-layout", choices=("nhwc", "nchw"),
                   help="the runtime's activation layout (default nhwc)")
    p.add_argument("--onednn-lib", metavar="PATH",
                   help="libdnnl.so.3 to ask for each layer's weights layout (default: "
                        "$ONEDNN_LIB, else the onednn-cpu-gomp wheel; 'none': the tables)")
    p.add_argument("--input-shape", action="append", metavar="NAME=DIMS",
                   help="shape of a dynamic model input, e.g. input=1x3x224x224 (repeatable; "
                        "a dynamic batch is 1)")
    p.add_argument("--explain", action="store_true",
                   help="print one line per layer: shapes, implementation, layout, and "
                        "whether oneDNN or the tables decided")
    p.add_argument("--dtype", choices=("f32", "f16"), help="float type of the outputs")
    p.add_argument("--rules", help="rules file (.toml or .yaml): tensor-name glob -> role, src, "
                                   "dst, dtype, quantize")
    p.add_argument("--force", action="store_true", help="overwrite existing outputs")
    p.add_argument("--scheduler", help="Dask scheduler address: spread the files over its workers")
    p.add_argument("--workers", type=int, help="tensors converted side by side (default: CPUs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars and no table")
    p.set_defaults(fn=run)
    return p


def run(args):
    from . import convert
    from .errors import ConvertError
    from .progress import table
    if args.output and args.out_dir:
        raise ConvertError("give either --output or --out-dir")
    if not args.output and not args.out_dir:
        raise ConvertError("give --output FILE (one input) or --out-dir DIR")
    if args.output and len(args.inputs) > 1:
        raise ConvertError(f"{len(args.inputs)} inputs need --out-dir, not --output")
    client = None
    try:
        if args.scheduler:
            from .cluster import connect
            client = connect(args.scheduler)
        kw = dict(target=args.target, rules=args.rules, isa=args.isa,
                  activations=args.activations, dtype=args.dtype, force=args.force,
                  client=client, workers=args.workers, progress=False if args.quiet else None,
                  onednn_lib=args.onednn_lib, input_shapes=args.input_shape,
                  src_layout=args.src_layout)
        if args.output:
            results = [convert(args.inputs[0], args.output, **kw)]
        else:
            results = convert(args.inputs, out_dir=args.out_dir, **kw)
    except ImportError as exc:
        raise ConvertError(str(exc)) from None
    finally:
        if client is not None:
            client.close()
    if args.explain:
        for r in results:
            for line in r.explain():
                print(f"{r.name}: {line}")
    if not args.quiet:
        print(table(results))
    return 0
