"""Host pack + upload of a 64 MiB NHWC float32 tensor into a channel-major RGBA image (float32
and half), next to numpy's transpose-based packing plus the same upload, the raw upload of an
already packed array alone ("copy" in the summary), and packing on the device (pack="device").

All cases write into one preallocated image, so allocation is not timed. Bytes counted per
case: the source tensor plus the image. Needs an OpenCL device with images (skips otherwise).
"""
import numpy as np
import pytest

from reorder import opencl as rocl

N, H, W, C = 1, 1024, 256, 64          # 64 MiB of float32; image 4096 x 1024 pixels
DTYPES = {"f32": np.float32, "f16": np.float16}


def _simulated(dev):
    return "oclgrind" in dev.platform.name.lower()


@pytest.fixture(scope="module")
def ocl(request):
    """A real device with images, one that builds the packing kernels first. Timed runs skip a
    simulator (Oclgrind's speed says nothing); an untimed run (--benchmark-disable), which
    only checks that the benchmarks still work, takes it with a tensor 32x smaller."""
    cl = pytest.importorskip("pyopencl")
    untimed = request.config.getoption("benchmark_disable", False)
    builds = {(r["platform"], r["device"]): r["builds"] for r in rocl.device_report()}
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices() if d.image_support]
    except cl.Error:
        devices = []
    if not untimed:
        devices = [d for d in devices if not _simulated(d)]
    devices.sort(key=lambda d: (_simulated(d),
                                not builds.get((d.platform.name.strip(), d.name.strip()), False)))
    if not devices:
        pytest.skip("no OpenCL device with image support (a simulator is not timed)")
    h = H if not untimed else H // 32
    width, height = rocl.image_shape("channel", (N, C, h, W))
    dev = devices[0]
    if width > dev.image2d_max_width or height > dev.image2d_max_height:
        pytest.skip(f"device images are smaller than {width} x {height}")
    queue = cl.CommandQueue(cl.Context([dev]))
    x = np.random.default_rng(0).standard_normal((N, h, W, C)).astype(np.float32)
    return cl, queue, x, builds.get((dev.platform.name.strip(), dev.name.strip()), False)


def numpy_pack(x, dtype):
    """The textbook way: convert, pad C to a multiple of 4, transpose, copy."""
    n, h, w, c = x.shape
    if x.dtype != dtype:
        x = x.astype(dtype)
    cb = -(-c // 4)
    if c % 4:
        x = np.pad(x, ((0, 0), (0, 0), (0, 0), (0, cb * 4 - c)))
    packed = np.ascontiguousarray(x.reshape(n, h, w, cb, 4).transpose(0, 1, 3, 2, 4))
    return packed.reshape(n * h, cb * w, 4)


def _run(benchmark, fn):
    benchmark.pedantic(fn, rounds=7, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("impl", ["reorder", "numpy", "copy"])
def test_pack_and_upload(benchmark, record, ocl, impl, dt):
    cl, queue, x, ocl_builds = ocl
    dtype = DTYPES[dt]
    img = rocl.to_image(queue, x, "channel", layout="nhwc", dtype=dtype)
    width, height = img.width, img.height
    group = f"opencl nhwc->channel {dt} {x.nbytes >> 20} MiB host pack + upload"
    benchmark.group = group

    def upload(host):
        cl.enqueue_copy(queue, img, host, origin=(0, 0), region=(width, height), is_blocking=True)

    if impl == "reorder":
        _run(benchmark, lambda: rocl.to_image(queue, x, "channel", layout="nhwc", dtype=dtype,
                                              image=img))
    elif impl == "numpy":
        assert np.array_equal(numpy_pack(x, dtype), rocl.to_image_array(x.astype(dtype), "channel",
                                                                        layout="nhwc"))
        _run(benchmark, lambda: upload(numpy_pack(x, dtype)))
    else:
        packed = rocl.to_image_array(x.astype(dtype), "channel", layout="nhwc")
        _run(benchmark, lambda: upload(packed))
    record(group, impl, x.nbytes + width * height * 4 * np.dtype(dtype).itemsize)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("impl", ["reorder", "copy"])
def test_device_pack(benchmark, record, ocl, impl, dt):
    """pack='device': x goes up as it is and a gather kernel writes the image."""
    cl, queue, x, ocl_builds = ocl
    dtype = DTYPES[dt]
    if not ocl_builds:
        pytest.skip("the device cannot build the packing kernels (python -m reorder info says why)")
    img = rocl.to_image(queue, x, "channel", layout="nhwc", dtype=dtype, pack="device")
    width, height = img.width, img.height
    group = f"opencl nhwc->channel {dt} {x.nbytes >> 20} MiB device pack"
    benchmark.group = group
    if impl == "reorder":
        host = np.empty((height, width, 4), dtype)
        cl.enqueue_copy(queue, host, img, origin=(0, 0), region=(width, height))
        assert np.array_equal(host, rocl.to_image_array(x.astype(dtype), "channel", layout="nhwc"))
        _run(benchmark, lambda: rocl.to_image(queue, x, "channel", layout="nhwc", dtype=dtype,
                                              image=img, pack="device"))
    else:
        packed = rocl.to_image_array(x.astype(dtype), "channel", layout="nhwc")
        _run(benchmark, lambda: cl.enqueue_copy(queue, img, packed, origin=(0, 0),
                                                region=(width, height), is_blocking=True))
    record(group, impl, x.nbytes + width * height * 4 * np.dtype(dtype).itemsize)
