"""OpenCL stage: tensors in RGBA 2-D images, laid out the way mobile GPU engines (MACE, MNN) do.

An image kind is an ordinary blocked layout whose innermost axis is a block of 4 (the RGBA
lanes), with its other physical axes grouped into rows (image height) and columns (image
width). Packing is one planned reorder into the host array of shape (height, width, 4); the
Winograd filter is computed (U = G g G^T in float32) and then laid out the same way.

    >>> import numpy as np
    >>> from reorder import opencl as rocl
    >>> x = np.arange(350, dtype=np.float32).reshape(1, 5, 7, 10)      # NHWC
    >>> rocl.image_shape("channel", (1, 10, 5, 7))                     # (width, height)
    (21, 5)
    >>> a = rocl.to_image_array(x, "channel", layout="nhwc")
    >>> a[2, 17].tolist()                                                # pixel x=17, y=2
    [178.0, 179.0, 0.0, 0.0]

Host functions need only numpy. The device functions (`to_image`, `from_image`) import
pyopencl when called; install it with ``pip install 'reorder[opencl]'``.
"""
from .kinds import ENGINES, KINDS, MNN_KINDS, Kind, image_shape
from .winograd import winograd_transform
from .host import from_image_array, to_image_array
from .device import DeviceBuildError, from_image, to_image
from .report import device_report, report_lines  # noqa: F401 - `python -m reorder info`

__all__ = ["KINDS", "MNN_KINDS", "ENGINES", "Kind", "DeviceBuildError", "image_shape",
           "to_image_array", "from_image_array", "to_image", "from_image", "winograd_transform",
           "device_report"]
