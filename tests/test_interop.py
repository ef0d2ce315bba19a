"""Same array type out as in: torch tensors (every dtype, bf16 and f8 included) through
DLPack, zero-copy, and the capsule reader against real producers. torch is optional: these
tests skip without it (it is not in the test extra: the CPU wheel alone is ~190 MB)."""
import gc

import numpy as np
import pytest

import reorder as ro
from reorder.front import interop

from reorder.testing.reference import ref_from_plain

torch = pytest.importorskip("torch")


def _t(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def _bytes_of(t):
    """The tensor's elements as raw bytes in logical order (any dtype)."""
    t = t.contiguous()
    return t.view(torch.uint8).numpy().copy() if t.dtype.itemsize == 1 else \
        t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.dtype.itemsize]).numpy().copy()


ALL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
              torch.uint8, torch.int32, torch.int64, torch.int16, torch.bool,
              torch.float8_e4m3fn, torch.float8_e5m2]


def _views(t):
    yield "contiguous", t
    yield "transposed", t.transpose(0, 2).contiguous().transpose(0, 2)
    yield "stepped+offset", torch.stack([torch.zeros_like(t), t], 1).flatten(0, 1)[1::2]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_rearrange_torch_in_torch_out(dtype):
    x = _t((2, 30, 3, 5), dtype)
    before = _bytes_of(x)
    for name, v in _views(x):
        y = ro.rearrange(v, "n (c c16) h w -> n c h w c16", c16=16)
        assert isinstance(y, torch.Tensor) and y.dtype == dtype, name
        assert y.shape == (2, 2, 3, 5, 16)
        # reference: pad the bytes with zeros and permute, in numpy
        raw = _bytes_of(v)
        ref = np.zeros((2, 32, 3, 5), raw.dtype)
        ref[:, :30] = raw
        ref = ref.reshape(2, 2, 16, 3, 5).transpose(0, 1, 3, 4, 2)
        assert np.array_equal(_bytes_of(y), ref), name
        back = ro.rearrange(y, "n c h w c16 -> n (c c16) h w", dims=tuple(x.shape))
        assert back.dtype == dtype and np.array_equal(_bytes_of(back), raw), name
    assert np.array_equal(_bytes_of(x), before), "the input was modified"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int8],
                         ids=str)
def test_reorder_torch_in_torch_out(dtype):
    x = _t((2, 17, 3, 4), dtype)
    y = ro.reorder(x, "nchw", "nChw16c")
    assert isinstance(y, torch.Tensor) and y.dtype == dtype
    ref = ref_from_plain(_bytes_of(x), "abcd", "aBcd16b")
    assert np.array_equal(_bytes_of(y), ref)


def test_out_is_a_torch_tensor():
    x = _t((2, 30, 3, 5), torch.bfloat16)
    out = torch.full((2, 3, 5, 30), float("nan"), dtype=torch.bfloat16)
    assert ro.rearrange(x, "n c h w -> n h w c", out=out) is out
    assert torch.equal(out, x.permute(0, 2, 3, 1))
    out2 = torch.full((2, 2, 3, 5, 16), 7, dtype=torch.bfloat16)
    assert ro.reorder(x, "nchw", "nChw16c", out=out2) is out2
    assert torch.equal(out2[:, 1, ..., 14:], torch.zeros(2, 3, 5, 2, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="out has shape"):
        ro.rearrange(x, "n c h w -> n h w c", out=torch.empty(2, 3, 5, 31, dtype=torch.bfloat16))


def test_result_shares_memory_and_converts_dtype():
    x = _t((1, 16, 2, 2), torch.bfloat16)
    y = ro.reorder(x, "nchw", "nhwc", dtype="f32")
    assert y.dtype == torch.float32 and torch.equal(y, x.float().permute(0, 2, 3, 1))
    y2 = ro.reorder(x, "nchw", "nhwc", dtype="s8")
    assert y2.dtype == torch.int8


def test_f8_is_refused_by_reorder_with_a_clear_message():
    x = _t((1, 16, 2, 2), torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="reorder\\(\\) has no float8_e4m3fn data type; "
                                        "rearrange\\(\\) moves"):
        ro.reorder(x, "nchw", "nhwc")


def test_capsule_reader_on_real_producers():
    """The ctypes reader against numpy's and torch's own readers: versioned and legacy
    capsules, strided and offset views, and the memory outliving the producer object."""
    base = _t((4, 6, 5), torch.float32)
    for v in (base, base.transpose(0, 2), base[1:, ::2, 1:]):
        arr, name, _ = interop._from_capsule(v, False)
        assert name == "float32" and np.array_equal(arr, v.numpy())

    class Legacy:                       # a producer from before DLPack 1.0
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()
    arr, _, _ = interop._from_capsule(Legacy(base[:, 1:]), False)
    assert np.array_equal(arr, base[:, 1:].numpy())
    b = base.to(torch.bfloat16)
    words = interop._from_capsule(b, True)[0].view(np.uint16)
    assert np.array_equal(words, b.view(torch.int16).numpy().view(np.uint16))
    want = words.copy()
    del b
    gc.collect()
    assert np.array_equal(words, want)          # the view keeps the producer's memory alive


def test_bf16_without_ml_dtypes_travels_as_words(monkeypatch):
    monkeypatch.setattr(interop, "_BF16_NP", None)
    x = _t((1, 17, 2, 2), torch.bfloat16)
    arr = interop.read(x)
    assert arr.dtype == np.uint16
    y = ro.reorder(x, "nchw", "nChw16c")
    assert y.dtype == torch.bfloat16
    assert np.array_equal(_bytes_of(y), ref_from_plain(_bytes_of(x), "abcd", "aBcd16b"))


def test_non_cpu_and_odd_inputs():
    class OnGpu:
        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(TypeError, match="not the CPU"):
        ro.rearrange(OnGpu(), "a -> a")
    with pytest.raises(TypeError, match="not the CPU"):
        ro.reorder(OnGpu(), "nchw", "nhwc")
    frozen = np.zeros((4, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ro.rearrange(torch.zeros(4, 4), "a b -> b a", out=frozen)
    with pytest.raises(TypeError, match="rearrange moves elements of 1, 2, 4 or 8 bytes"):
        ro.rearrange(np.zeros((2, 2), np.complex128), "a b -> b a")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn, torch.float16,
                                   torch.bool], ids=str)
def test_pad_value_in_the_tensor_dtype(dtype):
    x = _t((1, 5, 1, 1), dtype)
    y = ro.rearrange(x, "n (c c4) h w -> n c h w c4", c4=4, pad=1)
    want = torch.ones(1, 8, 1, 1, dtype=dtype)
    want[:, :5] = x
    assert torch.equal(y.view(torch.uint8), want.reshape(1, 2, 4, 1, 1).permute(0, 1, 3, 4, 2)
                       .contiguous().view(torch.uint8))


def test_pad_without_a_numpy_type_is_refused(monkeypatch):
    monkeypatch.setattr(interop, "_BF16_NP", None)
    monkeypatch.setattr(interop, "_REFUSED", set())
    x = _t((1, 5, 1, 1), torch.bfloat16)
    with pytest.raises(TypeError, match="pad=1 for torch.bfloat16 elements needs a numpy type"):
        ro.rearrange(x, "n (c c4) h w -> n c h w c4", c4=4, pad=1)
    y = ro.rearrange(x, "n (c c4) h w -> n c h w c4", c4=4)        # pad 0 is all-zero bits
    assert y.dtype == torch.bfloat16 and torch.equal(y.flatten()[:5], x.flatten())
