"""The same-type move cases the speed targets are set on, for every element size: shared by
`python -m reorder bench` (run without a src/dst pair) and benchmarks/test_move_speed.py.

Each is (name, dims, src tag, dst tag). Targets (ratio to np.copyto of the same bytes, medians,
1 and 2 threads): >= 1.0 / >= 0.9 on activations of >= 26 MB and in cache >= oneDNN's 0.93,
>= 0.9 padded, >= 0.6 nchw <-> nhwc, >= 0.8 small-spatial weights (docs/performance.md#targets)."""

MOVE_DTYPES = ("f32", "bf16", "f16", "s8", "u8", "f64")

MOVE_CASES = (
    ("nchw->nChw16c", (8, 256, 56, 56), "nchw", "nChw16c"),
    ("nChw16c->nchw", (8, 256, 56, 56), "nChw16c", "nchw"),
    ("nchw->nhwc", (8, 256, 56, 56), "nchw", "nhwc"),
    ("nhwc->nchw", (8, 256, 56, 56), "nhwc", "nchw"),
    ("nchw->nChw16c in cache", (1, 64, 112, 112), "nchw", "nChw16c"),
    ("nChw16c->nchw in cache", (1, 64, 112, 112), "nChw16c", "nchw"),
    ("nchw->nChw16c padded", (8, 3, 224, 224), "nchw", "nChw16c"),
    ("nChw16c->nChw16c padded", (8, 19, 56, 56), "nChw16c", "nChw16c"),
    ("nChw16c->nchw padded", (8, 24, 56, 56), "nChw16c", "nchw"),
    ("nhwc->nChw16c", (8, 256, 56, 56), "nhwc", "nChw16c"),
    ("nChw16c->nhwc", (8, 256, 56, 56), "nChw16c", "nhwc"),
    ("nhwc->nChw16c padded", (8, 19, 56, 56), "nhwc", "nChw16c"),
    ("nChw8c->nChw16c padded", (8, 19, 56, 56), "nChw8c", "nChw16c"),
    ("nChw8c->nChw16c", (8, 64, 56, 56), "nChw8c", "nChw16c"),
    ("nChw16c->nchw 7x7", (8, 512, 7, 7), "nChw16c", "nchw"),
    ("nchw->nChw16c 7x7", (8, 512, 7, 7), "nchw", "nChw16c"),
    # dst rows a multiple of 4 KiB apart in f32: planes of 64x64 pixels, pixels of 1024
    # channels (docs/kernels/transpose.md#tuning-constants)
    ("nChw16c->nchw 64x64", (2, 128, 64, 64), "nChw16c", "nchw"),
    ("nhwc->nchw 64x64", (2, 128, 64, 64), "nhwc", "nchw"),
    ("nchw->nhwc 1024c", (8, 1024, 14, 14), "nchw", "nhwc"),
    # images: pixels of three or four channels side by side <-> planes
    ("nhwc->nchw RGB", (8, 3, 224, 224), "nhwc", "nchw"),
    ("nchw->nhwc RGB", (8, 3, 224, 224), "nchw", "nhwc"),
    ("nhwc->nchw RGBA 1080p", (1, 4, 1080, 1920), "nhwc", "nchw"),
    ("oihw->OIhw16i16o", (512, 512, 3, 3), "oihw", "OIhw16i16o"),
    ("OIhw16i16o->oihw", (512, 512, 3, 3), "OIhw16i16o", "oihw"),
    ("oihw->OIhw4i16o4i padded", (200, 120, 3, 3), "oihw", "OIhw4i16o4i"),
    ("OIhw4i16o4i->oihw padded", (200, 120, 3, 3), "OIhw4i16o4i", "oihw"),
    # the 16-bit weights' layout (oneDNN's bf16 convolutions)
    ("oihw->OIhw8i16o2i padded", (200, 120, 3, 3), "oihw", "OIhw8i16o2i"),
    ("OIhw8i16o2i->oihw padded", (200, 120, 3, 3), "OIhw8i16o2i", "oihw"),
    # TensorFlow's weights (hwio: o contiguous) into oneDNN's layouts and back
    ("hwio->OIhw16i16o", (512, 512, 3, 3), "hwio", "OIhw16i16o"),
    ("hwio->OIhw4i16o4i", (512, 512, 3, 3), "hwio", "OIhw4i16o4i"),
    ("OIhw4i16o4i->hwio", (512, 512, 3, 3), "OIhw4i16o4i", "hwio"),
    ("hwio->OIhw8i16o2i", (512, 512, 3, 3), "hwio", "OIhw8i16o2i"),
)
