"""Layer 1: what a layout is. Errors, element types, tag spellings, `Desc` and the reorder
attributes; pure Python, importing nothing above it."""
