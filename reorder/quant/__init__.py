"""Layer 4: quantized results built on plans: low-bit (int4, nf4, ...) grouped weights."""
