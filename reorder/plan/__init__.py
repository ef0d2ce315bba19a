"""Layer 3: normalise a (source, destination) pair, pick the kernels, build a `Plan`, and the
one cache that owns every plan key."""
