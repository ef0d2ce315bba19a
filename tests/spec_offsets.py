"""Element offsets the layout spec works out by hand (§1.4), as (tag, dims, logical index,
offset): the descriptors and both references must give the same."""
SPEC_OFFSETS = [
    ("nChw16c", (2, 20, 5, 7), (1, 19, 2, 3), 1955),
    ("OIhw4i16o4i", (20, 10, 3, 3), (17, 9, 1, 2), 3717),
    ("OIhw8i16o2i", (20, 10, 3, 3), (17, 9, 1, 2), 3715),
    ("AB16b16a2b", (16, 63), (5, 37), 587),
    ("AB32a32b8a4b", (100, 70), (45, 57), 5589),
    ("nhwc", (2, 20, 5, 7), (1, 19, 2, 3), 1059),
]
