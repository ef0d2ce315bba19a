/* The AVX-512 conversion tiles from the 4- and 8-byte sources to every destination type: one
 * body for the f32 and s32 sources of each destination ("x32"), and the f64 ones. The macros
 * are in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILES_FOR(x32, 4)
RQ_TILES_FOR(f64, 8)
#endif
