/* The block kernel's block (blk_t, see blocks.h): its shape on the plain and the blocked side,
 * and the tables blk_prepare builds once per plan for the byte permutes and the register
 * path. */
#ifndef REORDER_MOVE_BLOCK_LAYOUT_H
#define REORDER_MOVE_BLOCK_LAYOUT_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"

/* Largest block (bytes) the scratch holds; bigger blocks are left to the transpose kernel. */
#define BLK_MAX_BYTES (32 * 1024)

typedef struct {
    int64_t R, C, il;       /* rows, columns, interleave width of the blocked side */
    int64_t rs;             /* plain-side row stride, elements (may be negative) */
    const int32_t* q;       /* C entries: scratch row of each column */
    const int64_t* coff;    /* runs: C entries, column c's plain offset (elements); else NULL */
    int esize;              /* bytes per element: 1, 2, 4 or 8 */
    /* il = 4, groups of 64 or 128 bytes: the byte permutes to the blocked order ([0]) and
     * back ([1]), set by blk_prepare; ix_bytes is 0 where they do not apply */
    int ix_bytes;
    uint8_t ix[2][128];
    /* 1- and 2-byte elements, R = 16, il * esize at most 8, and the columns in segments of
     * vw (a multiple of il, at most 320 bytes) that q permutes alike, each within itself: the
     * block moves a segment at a time in registers (blk_*_regs), set by blk_prepare; vk = 0
     * where it does not, else the segment's count of 64-byte registers.
     * rx[0][k]: chunk k of a segment in scratch order from its 64-byte registers, pairs
     * (0, 1), (2, 3) and (4), rm[0][k][p - 1] marking the bytes of pair p; rx[1], rm[1]: the
     * row's register k back from the chunks. lx: a 64-byte group of [r][a dword of scratch
     * rows] (4i16o4i bytes, 8i16o2i words) to the blocked order of il ([0]) and back ([1]). */
    int64_t vk, vw;
    int vid;                /* q is the identity within a segment: no permutes, no T */
    uint8_t rx[2][5][3][64];
    uint64_t rm[2][5][2];
    uint8_t lx[2][64];
} blk_t;

static inline int blk_have_avx2(void) { return reorder_cpu.avx2; }
static inline int blk_have_avx512(void) { return reorder_cpu.avx2 && reorder_cpu.avx512_vbmi; }

/* The plan-time part of a block: for il = 4 with groups of 4 rows of 16 or 32 bytes, the
 * byte permutes between scratch order (j * R + r) * e + x and blocked order (r * 4 + j) * e + x. */
static void blk_prepare_regs(blk_t* b);
static void blk_prepare(blk_t* b) {
    const int64_t e = b->esize, R = b->R, row = R * e;
    blk_prepare_regs(b);
    if (b->coff) b->vk = b->vid = 0;     /* runs: the columns are not rows' segments */
    b->ix_bytes = 0;
    if (b->il != 4 || (row != 16 && row != 32)) return;
    b->ix_bytes = (int)(4 * row);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t x = 0; x < e; x++) {
                const int64_t blocked = (r * 4 + j) * e + x, scratch = (j * R + r) * e + x;
                b->ix[0][blocked] = (uint8_t)scratch;
                b->ix[1][scratch] = (uint8_t)blocked;
            }
}

/* The tables of the register path: a row's byte c goes to scratch byte q[c]. */
static void blk_prepare_regs(blk_t* b) {
    const int64_t C = b->C, il = b->il, e = b->esize;
    int64_t W = 0;
    b->vk = b->vw = 0;
    /* a dword holds 4 / e elements of a row, and il of them at most interleave (or two
     * dwords: 4i16o4i words) */
    if ((e != 1 && e != 2) || b->R != 16 || (il != 1 && il != 2 && il != 4))
        return;
    /* of the segments of columns that every segment permutes alike, within itself, the one
     * of the fewest shuffles a column: a row's permute per 64 bytes (1 from one or two
     * registers, 2 from three, 3 from four, 4 from five), a transpose per 16 dwords (64, or
     * 20 for at most 4), and about 20 more a segment */
    int64_t best = 0;
    for (int64_t w = il; w * e <= 320; w += il) {
        if (C % w) continue;
        int64_t c = 0;
        while (c < C && b->q[c] == c / w * w + b->q[c % w]) c++;
        if (c < C) continue;
        const int64_t k = (w * e + 63) / 64, last = w * e - 64 * (k - 1);
        const int64_t ops = 16 * k * (k <= 2 ? 1 : k - 1) + 64 * (k - 1) + (last <= 16 ? 20 : 64) + 20;
        if (!W || ops * W < best * w) {
            W = w;
            best = ops;
        }
    }
    if (!W) return;
    b->vid = 1;
    for (int64_t c = 0; c < W; c++) b->vid &= b->q[c] == c;
    /* 2-byte rows that need both the permutes and a relabel (OIhw16i16o) measured level
     * with the AVX2 tiles: 8i16o2i and 4i16o4i weights and the identity (activations, 1x1
     * weights) take it */
    if (e == 2 && il == 1 && !b->vid) return;
    b->vw = W;
    b->vk = (W * e + 63) / 64;
    memset(b->rx, 0, sizeof b->rx);
    memset(b->rm, 0, sizeof b->rm);
    for (int64_t c = 0; c < W; c++)
        for (int64_t x = 0; x < e; x++) {
            const int64_t cb = c * e + x, qb = b->q[c] * e + x;
            b->rx[0][qb / 64][cb / 128][qb % 64] = (uint8_t)(cb & 127);
            if (cb >= 128) b->rm[0][qb / 64][cb / 128 - 1] |= 1ULL << (qb % 64);
            b->rx[1][cb / 64][qb / 128][cb % 64] = (uint8_t)(qb & 127);
            if (qb >= 128) b->rm[1][cb / 64][qb / 128 - 1] |= 1ULL << (cb % 64);
        }
    for (int64_t r = 0; r < 16 && il * e <= 4; r++)
        for (int64_t j = 0; j < 4 / e; j++)
            for (int64_t x = 0; x < e; x++) {
                const int64_t dw = r * 4 + j * e + x;
                const int64_t blocked = ((j / il) * (16 * il) + r * il + j % il) * e + x;
                b->lx[0][blocked] = (uint8_t)dw;
                b->lx[1][dw] = (uint8_t)blocked;
            }
}

#endif
