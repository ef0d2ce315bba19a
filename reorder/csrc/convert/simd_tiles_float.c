/* The AVX-512 conversion tiles from f32, f64, f16 and bf16 sources to every
 * destination type, with one body for the f16 and bf16 sources of each destination ("h16").
 * The macros are in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILES_FOR(f32, 4)
RQ_TILES_FOR(f64, 8)
RQ_TILES_FOR(h16, 2)
#endif
