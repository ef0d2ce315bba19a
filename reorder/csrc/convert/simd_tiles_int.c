/* The AVX-512 conversion tiles from s8, u8 and s32 sources to every destination
 * type, with one body for the s8 and u8 sources of each destination ("b8"). The macros are
 * in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILES_FOR(b8, 1)
RQ_TILES_FOR(s32, 4)
#endif
