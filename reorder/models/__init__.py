"""Whole models: convert a checkpoint's weights (ONNX, safetensors, npz/npy) to the layouts a
runtime consumes, into one memory-mappable .safetensors file; load it back.

    >>> import reorder
    >>> reorder.convert("resnet.onnx", "resnet-avx512.safetensors", target="onednn-int8")
    >>> weights = reorder.load("resnet-avx512.safetensors")     # {name: (array, Desc)}

Layers: readers (files -> tensors + roles), rules, presets (role -> decision), tasks
(decision -> outputs + fill), writer (atomic safetensors), runner (threads, memory budget,
Dask), loader.
"""
import os

from .errors import ConvertError
from .loader import Loaded, load
from .presets import ISAS, PRESETS
from . import onednn_runtime
from .runner import Result, convert_file, convert_many, convert_on_cluster

__all__ = ["ConvertError", "ISAS", "Loaded", "PRESETS", "Result", "convert", "load",
           "onednn_weights_layout"]


def convert(src, dst=None, target="onednn-f32", *, out_dir=None, rules=None, isa=None,
            activations=None, dtype=None, force=False, client=None, workers=None, memory=None,
            progress=None, onednn_lib=None, input_shapes=None, src_layout=None):
    """Convert a model's weights for a runtime.

    src          a file (.onnx, .safetensors, .npz, .npy) or a list of files
    dst          the output .safetensors file (one src), or None with out_dir
    target       'onednn-f32', 'onednn-int8', 'onednn-int4', 'onednn-int4-asym', 'onednn-f8',
                 'mace-gpu', 'mnn-gpu', 'tvm:<LAYOUT>' or 'plain'
    out_dir      for many files: each becomes out_dir/<name>.safetensors
    rules        a rules file (.toml / .yaml) or a list of rule dicts: tensor-name glob ->
                 role, src, dst, dtype, quantize, compensation, scale_adjust
    isa          onednn-int8 / onednn-f32: limit the oneDNN asked to this ISA (default: the
                 machine's); without oneDNN, the tables' ISA (default avx512_core_vnni)
    activations  the primitives' source type: onednn-int8 's8' (default: s8s8
                 compensation) or 'u8' (none); onednn-f32 'f32' (default) or 'bf16'
    onednn_lib   onednn-f32 / onednn-int8 of an ONNX model: the libdnnl.so.3 asked for each
                 layer's weights layout (default: $ONEDNN_LIB, else the onednn-cpu-gomp
                 wheel; 'none': the tables)
    input_shapes {input name: dims} or ['NAME=1x3x224x224', ...] for dynamic model inputs
                 (a dynamic batch is 1)
    src_layout   the runtime's activation layout, 'nhwc' (default) or 'nchw'
    dtype        'f32' or 'f16' for float outputs (images, f32 presets)
    force        overwrite an existing output
    client       a dask.distributed.Client: spread the files over its workers
    workers      threads converting tensors side by side (default: the usable CPUs)
    memory       memory budget in bytes (default: the largest tensor's input + output)
    progress     None (on a terminal), True or False

    Returns a Result (or a list of them, for many files): tensors, bytes in / out, seconds.
    """
    many = not isinstance(src, (str, os.PathLike))
    kw = dict(rules=rules, isa=isa, activations=activations, dtype=dtype, force=force,
              workers=workers, memory=memory, onednn_lib=onednn_lib, input_shapes=input_shapes,
              src_layout=src_layout)
    if many or out_dir is not None:
        if dst is not None:
            raise ConvertError("give either dst (one file) or out_dir, not both")
        if out_dir is None:
            raise ConvertError("converting several files needs out_dir")
        return convert_many([src] if not many else list(src), out_dir, target, client=client,
                            progress=progress, **kw)
    if dst is None:
        raise ConvertError("convert() needs dst (or out_dir)")
    if client is not None:
        return convert_on_cluster(client, src, dst, target, progress, kw)
    return convert_file(src, dst, target, progress=progress, **kw)


def onednn_weights_layout(kind="conv", src_dims=None, weights_dims=None, *, strides=None,
                          pads=None, dilations=None, groups=1, src_dtype="f32",
                          src_layout="nhwc", src_zero_point=False, dst_dims=None,
                          output_padding=None, lib=None, isa=None):
    """Ask the installed oneDNN (3.x) which weights layout its forward-inference primitive
    wants for one layer, so a script can prepare a weight with reorder() / quantize() exactly
    as that runtime will read it.

    kind          'conv', 'deconv' (ConvTranspose), 'ip' (Gemm: inner product) or 'matmul'
    src_dims      the source's dims (N, C, spatial...) or (M, K)
    weights_dims  the weight as ONNX / PyTorch store it: Conv (O, I/groups, k...),
                  ConvTranspose (I, O/groups, k...), Gemm (N, K), MatMul B (K, N)
    strides, pads (begins then ends), dilations (ONNX's: 1 = dense), groups
    src_dtype     'f32' / 'bf16', or 'u8' / 's8' for int8 (weight scales per output
                  channel, a common source scale, src_zero_point=True adds a zero point)
    src_layout    'nhwc' (default) or 'nchw'
    lib           path of libdnnl.so.3 (default: $ONEDNN_LIB, else the onednn-cpu-gomp wheel)
    isa           limit oneDNN to this ISA (ONEDNN_MAX_CPU_ISA, in a child process); an ISA
                  the machine cannot run gives a warning and None

    Returns a WeightsLayout: .tag (an abstract tag over .dims, oneDNN's logical weights dims),
    .dtype, .padded_dims, .size (dnnl_memory_desc_get_size), .compensation, .comp_mask,
    .scale_adjust, .implementation, .version, .isa. Answers are cached per (layer, library).
    """
    return onednn_runtime.weights_layout(kind, src_dims, weights_dims, strides, pads,
                                         dilations, groups, src_dtype, src_layout,
                                         src_zero_point, dst_dims, output_padding, lib, isa)
