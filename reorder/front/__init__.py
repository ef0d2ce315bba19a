"""Layer 5: what users call: `reorder()`, `plan()`, `quantize()`, `rearrange()`, array
interop and the build report."""
