/* The AVX-512 conversion tiles to bf16 through AVX512-BF16's own rounding
 * (vcvtne2ps2bf16), from every source type, one body for the sources of each size
 * (convert/x86.h). The macros are in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILE_BF16HW(x32, 4)
RQ_TILE_BF16HW(f64, 8)
RQ_TILE_BF16HW(h16, 2)
RQ_TILE_BF16HW(b8, 1)
#endif
