/* The portable tiles: cache-blocked scalar loops the compiler can vectorise, one per element
 * size, following the tile contract of tile_rows.h. They write the same bytes as every SIMD
 * tile, and run where the CPU has no SIMD path or the tests turn SIMD off. */
#ifndef REORDER_MOVE_TILES_PORTABLE_H
#define REORDER_MOVE_TILES_PORTABLE_H
#include <stdint.h>
#include <string.h>
#include "move/tile_rows.h"

#define REORDER_SCALAR_TILE(T, NAME)                                                       \
static void NAME(const T* src, const arows_t* A, int64_t na, T* dst, const rows_t* rows,  \
                 int64_t bs, int64_t nbv, int64_t nbw) {                                  \
    int64_t soff[TILE];                                                                   \
    uint32_t vm, wm;                                                                      \
    for (int64_t a0 = 0; a0 < na; a0 += TILE) {                                           \
        int n = na - a0 < TILE ? (int)(na - a0) : TILE;                                   \
        arow_block(A, a0, n, soff, &vm, &wm);                                             \
        if (!wm) continue;                                                                \
        for (int64_t b = 0; b < nbw; b++) {                                               \
            T* d = dst + row_off(rows, bs + b) + a0;                                      \
            for (int i = 0; i < n; i++) {                                                 \
                if (!((wm >> i) & 1u)) continue;                                          \
                if (b < nbv && ((vm >> i) & 1u)) d[i] = src[soff[i] + b];                 \
                else memset(d + i, 0, sizeof(T));                                         \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
}
REORDER_SCALAR_TILE(uint8_t, tile_scalar_u8)
REORDER_SCALAR_TILE(uint16_t, tile_scalar_u16)
REORDER_SCALAR_TILE(uint32_t, tile_scalar_u32)
REORDER_SCALAR_TILE(uint64_t, tile_scalar_u64)

#endif
