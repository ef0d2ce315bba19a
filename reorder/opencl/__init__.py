"""OpenCL stage: tensors in RGBA 2-D images, laid out the way mobile GPU engines (MACE, MNN) do."""
from .device import (ENGINES, KINDS, MNN_KINDS, DeviceBuildError, Kind, device_report,  # noqa: F401
                     from_image, from_image_array, image_shape, report_lines, to_image,
                     to_image_array, winograd_transform)

__all__ = ["KINDS", "MNN_KINDS", "ENGINES", "Kind", "DeviceBuildError", "image_shape",
           "to_image_array", "from_image_array", "to_image", "from_image", "winograd_transform",
           "device_report"]
