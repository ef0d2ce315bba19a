/* The block kernel's portable loops, one set per element size: they write the same bytes as
 * the SIMD paths and run where those do not apply. */
#ifndef REORDER_MOVE_BLOCKS_PORTABLE_H
#define REORDER_MOVE_BLOCKS_PORTABLE_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/block_layout.h"

/* ---- portable loops, one set per element size ------------------------------------------ */
/* gather: T[q[c]][r] = plain (r, c) for rows [0, R) x columns [c0, C), zeros outside rv x cv;
 *   rows outer so the plain side is read in order (T is in L1).
 * scatter: plain (r, c) = T[q[c]][r] for rows [0, rv) x columns [c0, cv).
 * (de)interleave: groups of il rows of T (each R elements) <-> blocked order [r][il]. */
#define REORDER_BLK_SCALAR(W, SFX)                                                          \
static void blk_gather_##SFX(const blk_t* b, const char* rows_, char* T_, int64_t rv,     \
                             int64_t cv, int64_t c0) {                                    \
    const W* rows = (const W*)rows_;                                                      \
    W* T = (W*)T_;                                                                        \
    const int64_t R = b->R, C = b->C;                                                     \
    const int32_t* q = b->q;                                                              \
    for (int64_t r = 0; r < R; r++) {                                                     \
        const W* s = rows + r * b->rs;                                                    \
        if (r < rv)                                                                       \
            for (int64_t c = c0; c < cv; c++) T[(int64_t)q[c] * R + r] = s[c];            \
        else                                                                              \
            for (int64_t c = c0; c < cv; c++) T[(int64_t)q[c] * R + r] = 0;               \
    }                                                                                     \
    for (int64_t c = cv > c0 ? cv : c0; c < C; c++)                                       \
        memset(T + (int64_t)q[c] * R, 0, R * sizeof(W));                                  \
}                                                                                         \
static void blk_scatter_##SFX(const blk_t* b, const char* T_, char* rows_, int64_t ros,   \
                              int64_t rv, int64_t cv, int64_t c0) {                       \
    const W* T = (const W*)T_;                                                            \
    W* rows = (W*)rows_;                                                                  \
    const int64_t R = b->R;                                                               \
    const int32_t* q = b->q;                                                              \
    for (int64_t r = 0; r < rv; r++) {                                                    \
        W* d = rows + r * ros;                                                            \
        for (int64_t c = c0; c < cv; c++) d[c] = T[(int64_t)q[c] * R + r];                \
    }                                                                                     \
}                                                                                         \
static void blk_interleave_##SFX(const blk_t* b, const char* T_, char* out_) {            \
    const W* T = (const W*)T_;                                                            \
    W* out = (W*)out_;                                                                    \
    const int64_t R = b->R, il = b->il, n = R * b->C;                                     \
    for (int64_t g = 0; g < n; g += il * R)                                               \
        for (int64_t j = 0; j < il; j++)                                                  \
            for (int64_t r = 0; r < R; r++) out[g + r * il + j] = T[g + j * R + r];       \
}                                                                                         \
static void blk_deinterleave_##SFX(const blk_t* b, const char* in_, char* T_) {           \
    const W* in = (const W*)in_;                                                          \
    W* T = (W*)T_;                                                                        \
    const int64_t R = b->R, il = b->il, n = R * b->C;                                     \
    for (int64_t g = 0; g < n; g += il * R)                                               \
        for (int64_t j = 0; j < il; j++)                                                  \
            for (int64_t r = 0; r < R; r++) T[g + j * R + r] = in[g + r * il + j];        \
}
REORDER_BLK_SCALAR(uint8_t, u8)
REORDER_BLK_SCALAR(uint16_t, u16)
REORDER_BLK_SCALAR(uint32_t, u32)
REORDER_BLK_SCALAR(uint64_t, u64)

#define REORDER_BLK_BY_SIZE(e, CALL)                                                        \
    switch (e) {                                                                          \
    case 1: CALL(u8); break;                                                              \
    case 2: CALL(u16); break;                                                             \
    case 4: CALL(u32); break;                                                             \
    default: CALL(u64); break;                                                            \
    }

static void blk_gather_scalar(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv,
                              int64_t c0) {
#define BLK_CALL(S) blk_gather_##S(b, rows, T, rv, cv, c0)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_scatter_scalar(const blk_t* b, const char* T, char* rows, int64_t ros,
                               int64_t rv, int64_t cv, int64_t c0) {
#define BLK_CALL(S) blk_scatter_##S(b, T, rows, ros, rv, cv, c0)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_interleave_scalar(const blk_t* b, const char* T, char* out) {
#define BLK_CALL(S) blk_interleave_##S(b, T, out)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_deinterleave_scalar(const blk_t* b, const char* in, char* T) {
#define BLK_CALL(S) blk_deinterleave_##S(b, in, T)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

#endif
