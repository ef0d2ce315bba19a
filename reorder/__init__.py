"""reorder: exact, fast tensor layout reorders (plain, blocked, int8) on the CPU.

    >>> import numpy as np, reorder as ro
    >>> x = np.random.rand(8, 30, 56, 56).astype(np.float32)
    >>> y = ro.reorder(x, "nchw", "nChw16c")          # (8, 2, 56, 56, 16), channels 30, 31 zero
    >>> back = ro.reorder(y, "nChw16c", "nchw", dims=x.shape)
"""
from ._version import __version__
from .core.desc import Desc
from .core.errors import ReorderError
from .core.index_map import AXIS_SEPARATOR, IndexMap
from .core.tags import Tag, normalize_tag, parse_tag
from .kernels.threads import get_num_threads, set_num_threads, threads
from .plan.plans import Plan
from .quant.results import QuantizedLowBit
from .front.api import Quantized, plan, quantize, reorder
from .front.config import show_config
from .front.rearrange import RearrangeError, rearrange
from .front.transform import transform_layout
from .plot import plot_layout
from .models import convert, load, onednn_weights_layout

__all__ = ["AXIS_SEPARATOR", "Desc", "IndexMap", "Plan", "RearrangeError", "ReorderError", "Tag",
           "__version__", "convert",
           "get_num_threads", "load", "normalize_tag", "onednn_weights_layout", "parse_tag",
           "plan", "plot_layout",
           "Quantized", "QuantizedLowBit", "quantize", "rearrange", "reorder", "set_num_threads",
           "show_config", "threads",
           "transform_layout"]
