"""jax arrays in, jax arrays out, bf16 and f8 included (skipped without jax, an optional
dependency like torch)."""
import numpy as np
import pytest

import reorder as ro

from reorder.testing.reference import ref_from_plain

jnp = pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int8", "float8_e4m3fn"])
def test_rearrange_jax_in_jax_out(dtype):
    x = jnp.asarray(np.random.default_rng(0).integers(-50, 50, (2, 30, 3, 5))).astype(dtype)
    y = ro.rearrange(x, "n (c c16) h w -> n c h w c16", c16=16)
    assert type(y) is type(x) and y.dtype == x.dtype and y.shape == (2, 2, 3, 5, 16)
    raw = np.asarray(x).view(f"u{x.dtype.itemsize}")
    ref = np.zeros((2, 32, 3, 5), raw.dtype)
    ref[:, :30] = raw
    assert np.array_equal(np.asarray(y).view(raw.dtype),
                          ref.reshape(2, 2, 16, 3, 5).transpose(0, 1, 3, 4, 2))
    back = ro.rearrange(y, "n c h w c16 -> n (c c16) h w", dims=x.shape)
    assert np.array_equal(np.asarray(back).view(raw.dtype), raw)


def test_reorder_jax_bf16():
    x = jnp.asarray((np.arange(2 * 17 * 3 * 4) % 200).astype(np.float32).reshape(2, 17, 3, 4))
    y = ro.reorder(x.astype("bfloat16"), "nchw", "nChw16c")
    assert y.dtype == jnp.bfloat16
    assert np.array_equal(np.asarray(y.astype("float32")),
                          ref_from_plain(np.asarray(x), "abcd", "aBcd16b"))
    z = ro.reorder(x.astype("bfloat16"), "nchw", "nhwc", dtype="f32")
    assert z.dtype == jnp.float32
