/* The AVX-512 conversion tiles from s8, u8 and s32 sources to every destination
 * type. The macros are in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILES_FOR(s8, 1)
RQ_TILES_FOR(u8, 1)
RQ_TILES_FOR(s32, 4)
#endif
