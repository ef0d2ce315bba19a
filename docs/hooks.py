"""MkDocs hooks: draw the pictures and speed plots the pages show, and fail the build when a
public name has no docstring (the API reference is generated from them)."""
import inspect
import os

from mkdocs.exceptions import PluginError

IMG = "img"

LAYOUTS = [   # (file, dims, tag)
    ("nchw", (1, 3, 2, 3), "nchw"),
    ("nhwc", (1, 3, 2, 3), "nhwc"),
    ("nChw16c", (1, 20, 2, 3), "nChw16c"),
    ("nChw4c", (1, 6, 2, 3), "nChw4c"),
    ("NCHW4c-tvm", (1, 6, 2, 2), "NCHW4c"),
    ("OIhw16i16o", (20, 18, 1, 1), "OIhw16i16o"),
    ("OIhw4i16o4i", (20, 6, 1, 1), "OIhw4i16o4i"),
    ("Goihw8g", (10, 1, 1, 2, 2), "Goihw8g"),
    ("strided", None, None),
]
IMAGES = [("channel", (1, 6, 2, 3)), ("height", (1, 2, 5, 2)), ("width", (1, 2, 2, 5)),
          ("conv2d_filter", (6, 3, 2, 2)), ("dw_conv2d_filter", (1, 6, 2, 2)),
          ("weight_height", (6, 2, 1, 2)), ("weight_width", (3, 6, 1, 2)), ("argument", (10,))]
SPEED = [("nchw", "nChw16c", "8x30x56x56"), ("nchw", "nhwc", "8x64x56x56"),
         ("oihw", "OIhw4i16o4i", "256x256x3x3")]


def _check_docstrings():
    import reorder
    from reorder import opencl, plot
    missing = []
    for mod in (reorder, opencl, plot):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not inspect.getdoc(obj):
                missing.append(f"{mod.__name__}.{name}")
    if missing:
        raise PluginError(f"public names without a docstring: {', '.join(missing)}")


def _pictures(out):
    import numpy as np
    import matplotlib.pyplot as plt
    import reorder as ro
    from reorder.__main__ import main
    from reorder.plot import plot_image, plot_layout
    for name, dims, tag in LAYOUTS:
        if tag is None:     # a strided numpy view: a transposed, stepped slice
            x = np.zeros((4, 6), np.float32)[:, ::2].T
            desc = ro.Desc.of(x)
        else:
            desc = ro.Desc(dims, "f32", tag)
        plot_layout(desc, os.path.join(out, f"layout-{name}.png"))
        plt.close("all")
    for kind, dims in IMAGES:
        plot_image(kind, dims, os.path.join(out, f"image-{kind}.png"))
        plt.close("all")
    for src, dst, dims in SPEED:
        main(["bench", src, dst, "--dims", dims, "--threads", "1,2", "--repeat", "9",
              "--plot", os.path.join(out, f"speed-{src}-{dst}.png")])
        plt.close("all")


def on_pre_build(config, **kwargs):
    _check_docstrings()
    out = os.path.join(config["docs_dir"], IMG)
    os.makedirs(out, exist_ok=True)
    _pictures(out)
