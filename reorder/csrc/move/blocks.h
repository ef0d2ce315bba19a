/* Block kernel: conv weights with small spatial dims (oihw <-> OIhw16i16o, OIhw4i16o4i, ...).
 *
 * One block is R rows x C columns of elements. On the plain side, row r is C contiguous
 * elements at r * rs (oihw: r = o within the O block, column c = i * h*w + hw within the I
 * block). On the blocked side the block is R * C contiguous elements; column c goes to
 * "scratch row" q[c], and scratch rows come in groups of il that interleave with r:
 *     blocked offset of (r, c) = (q[c] / il) * (R * il) + r * il + q[c] % il
 * (OIhw16i16o: il = 1, q[c] = hw * 16 + i; OIhw4i16o4i: il = 4, q = (hw * 4 + i / 4) * 4 + i % 4).
 *
 * A block moves in two stages through a scratch T (C rows of R elements, in L1):
 *   plain -> blocked: (1) register transposes of R x W tiles of the plain rows into T,
 *                     each column to its row q[c]; (2) the groups of il rows of T interleaved
 *                     into the blocked block (il = 1: T *is* the blocked block).
 *   blocked -> plain: (1) the blocked block de-interleaved into T (il = 1: T is the source
 *                     block itself); (2) register transposes of W x R tiles of T into the
 *                     plain rows.
 * Only rows r < rv and columns c < cv hold data. Plain -> blocked writes zeros for the rest
 * (destination padding) in the same pass; blocked -> plain skips them. A block that lies
 * wholly in the destination's padding of a dim outside the block is all zeros either way
 * (blk_plain_zeros on the plain side).
 *
 * Runs (coff set): the plain side's rows are contiguous instead, and column c is the run of
 * R elements at coff[c] (hwio: the 16 o of one i and one spatial position). A run goes whole
 * to (or from) its scratch row, with the interleave stage as above; nothing to transpose.
 *
 * Streaming (nt): the destination is first built in a second scratch and then copied out
 * with non-temporal stores of whole 64-byte lines (the caller issues the sfence).
 *
 * simd = 1 takes the AVX2 paths where the shape has them (R a multiple of 4 for 8-byte
 * elements, of 8 or 16 for the others; il 1, 2 or 4); simd = 2 also takes the AVX-512 byte
 * permutes for the il = 4 interleave of 16- and 32-byte rows, 16 x 16 tiles and an AVX-512
 * il = 4 interleave for 4-byte elements where R is a multiple of 16, and moves blocks of 16
 * rows of 1- and 2-byte elements in registers, a segment of columns at a time (the register
 * path, below: no tiles, no interleave pass); everything else, and simd = 0, runs portable
 * loops that write the same bytes.
 */
#ifndef REORDER_MOVE_BLOCKS_H
#define REORDER_MOVE_BLOCKS_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/block_layout.h"
#include "move/blocks_portable.h"
#include "move/blocks_avx2.h"
#include "move/blocks_avx512.h"


static void blk_copy_out(char* d, const char* s, int64_t n, int nt, int simd) {
#if REORDER_X86
    if (nt && simd) {
        blk_stream_avx2(d, s, n);
        return;
    }
#endif
    (void)nt;
    (void)simd;
    memcpy(d, s, n);
}

static inline void blk_interleave(const blk_t* b, const char* T, char* out, int simd) {
#if REORDER_X86
    if (simd >= 2 && b->il == 4 && (blk_interleave4_vbmi(b, T, out, 1) || blk_interleave4_avx512(b, T, out, 1)))
        return;
    if (simd && b->il == 4 && b->esize <= 4 && (blk_interleave4_avx2(b, T, out) || blk_interleave4_sse(b, T, out)))
        return;
    if (simd && b->il == 4 && b->esize == 8 && blk_interleave4_q(b, T, out, 1))
        return;
    if (simd && b->il == 2 && blk_interleave2_avx2(b, T, out))
        return;
#endif
    (void)simd;
    blk_interleave_scalar(b, T, out);
}

static inline void blk_deinterleave(const blk_t* b, const char* in, char* T, int simd) {
#if REORDER_X86
    if (simd >= 2 && b->il == 4 && (blk_interleave4_vbmi(b, in, T, 0) || blk_interleave4_avx512(b, in, T, 0)))
        return;
    if (simd && b->il == 4 && b->esize <= 4 && (blk_deinterleave4_avx2(b, in, T) || blk_deinterleave4_sse(b, in, T)))
        return;
    if (simd && b->il == 4 && b->esize == 8 && blk_interleave4_q(b, in, T, 0))
        return;
    if (simd && b->il == 2 && blk_deinterleave2_avx2(b, in, T))
        return;
#endif
    (void)simd;
    blk_deinterleave_scalar(b, in, T);
}

/* Plain -> blocked, the scratch filled: the interleave into dst, through T2 when streamed
 * (il = 1: the scratch was dst itself unless streamed). */
static inline void blk_scratch_out(const blk_t* b, const char* T, char* T2, char* dst,
                                   int64_t n, int nt, int simd) {
    if (b->il == 1) {
        if (nt) blk_copy_out(dst, T, n, 1, simd);
    } else if (nt) {
        blk_interleave(b, T, T2, simd);
        blk_copy_out(dst, T2, n, 1, simd);
    } else {
        blk_interleave(b, T, dst, simd);
    }
}

/* n bytes of a run; the sizes of 16 rows of 1-, 2-, 4- and 8-byte elements as constants */
static inline void blk_run_copy(char* d, const char* s, int64_t n) {
    switch (n) {
    case 16: memcpy(d, s, 16); return;
    case 32: memcpy(d, s, 32); return;
    case 64: memcpy(d, s, 64); return;
    case 128: memcpy(d, s, 128); return;
    default: memcpy(d, s, (size_t)n);
    }
}

/* Runs, plain -> blocked: each valid column's run into its scratch row (zeros around the
 * valid part), then the interleave into dst, streamed through T2 when nt. */
static void blk_runs_to_blocked(const blk_t* b, const char* rows, char* dst, int64_t rv,
                                int64_t cv, char* T, char* T2, int nt, int simd) {
    const int64_t e = b->esize, row = b->R * e, n = b->C * row;
    char* t = (b->il == 1 && !nt) ? dst : T;
    const int32_t* q = b->q;
    const int64_t* coff = b->coff;
    int64_t c = 0;
    if (rv < b->R || cv < b->C) memset(t, 0, n);
#if REORDER_X86
    if (simd && rv * e == 16) {
        /* 16-byte runs (bytes): eight loads in flight, then their stores */
        for (; c + 8 <= cv; c += 8) {
            __m128i v[8];
            for (int k = 0; k < 8; k++)
                v[k] = _mm_loadu_si128((const __m128i*)(rows + coff[c + k] * e));
            for (int k = 0; k < 8; k++)
                _mm_storeu_si128((__m128i*)(t + (int64_t)q[c + k] * row), v[k]);
        }
    }
#endif
    for (; c < cv; c++)
        blk_run_copy(t + (int64_t)q[c] * row, rows + coff[c] * e, rv * e);
    blk_scratch_out(b, T, T2, dst, n, nt, simd);
}

/* Runs, blocked -> plain: the block de-interleaved into T, each valid column's valid part
 * out to its run (cached stores: a run is at most a few lines). */
static void blk_runs_to_plain(const blk_t* b, const char* src, char* rows, int64_t rv,
                              int64_t cv, char* T, int simd) {
    const int64_t e = b->esize, row = b->R * e;
    const char* t = src;
    if (b->il != 1) {
        blk_deinterleave(b, src, T, simd);
        t = T;
    }
    for (int64_t c = 0; c < cv; c++)
        blk_run_copy(rows + b->coff[c] * e, t + (int64_t)b->q[c] * row, rv * e);
}

/* One block, plain -> blocked. rows: plain row 0 of the block; dst: the blocked block.
 * T, T2: scratch of BLK_MAX_BYTES each (the caller's stack), 64-byte aligned. */
static void blk_to_blocked(const blk_t* b, const char* rows, char* dst, int64_t rv, int64_t cv,
                           char* T, char* T2, int nt, int simd) {
    const int64_t n = b->R * b->C * b->esize;
    /* il = 1 and cached stores: the scratch is the destination block itself */
    char* t = (b->il == 1 && !nt) ? dst : T;
    int64_t c0 = 0;
    if (rv <= 0) {
        memset(dst, 0, n);
        return;
    }
    if (b->coff) {
        blk_runs_to_blocked(b, rows, dst, rv, cv, T, T2, nt, simd);
        return;
    }
#if REORDER_X86
    if (simd >= 2 && b->vk) {
        blk_to_blocked_regs(b, rows, nt ? T2 : dst, rv, cv, T);
        if (nt) blk_copy_out(dst, T2, n, 1, simd);
        return;
    }
    if (simd >= 2) c0 = blk_gather_avx512(b, rows, t, rv, cv);
    if (simd) c0 = blk_gather_avx2(b, rows, t, rv, cv, c0);
#endif
    blk_gather_scalar(b, rows, t, rv, cv, c0);
    blk_scratch_out(b, T, T2, dst, n, nt, simd);
}

/* One block's place on the plain side, rows [0, rv) x columns [0, cv), set to zero: blocked ->
 * plain into a destination that is padded in a dim outside the block (its padding is part of
 * the result, whatever the output held). */
static void blk_plain_zeros(const blk_t* b, char* rows, int64_t rv, int64_t cv) {
    const int64_t e = b->esize;
    if (rv <= 0 || cv <= 0) return;
    if (b->coff) {
        for (int64_t c = 0; c < cv; c++) memset(rows + b->coff[c] * e, 0, (size_t)(rv * e));
        return;
    }
    for (int64_t r = 0; r < rv; r++) memset(rows + r * b->rs * e, 0, (size_t)(cv * e));
}

/* One block, blocked -> plain. src: the blocked block; rows: plain row 0 of the block. */
static void blk_to_plain(const blk_t* b, const char* src, char* rows, int64_t rv, int64_t cv,
                         char* T, char* T2, int nt, int simd) {
    const int e = b->esize;
    const char* t = src;
    if (rv <= 0 || cv <= 0) return;
    if (b->coff) {
        blk_runs_to_plain(b, src, rows, rv, cv, T, simd);
        return;
    }
#if REORDER_X86
    if (simd >= 2 && b->vk) {
        blk_to_plain_regs(b, src, nt ? T2 : rows, nt ? b->C : b->rs, rv, cv, T);
        if (nt)
            for (int64_t r = 0; r < rv; r++)
                blk_copy_out(rows + r * b->rs * e, T2 + r * b->C * e, cv * e, 1, simd);
        return;
    }
#endif
    if (b->il != 1) {
        blk_deinterleave(b, src, T, simd);
        t = T;
    }
    char* out = nt ? T2 : rows;
    int64_t ros = nt ? b->C : b->rs;
    int64_t c0 = 0;
#if REORDER_X86
    if (simd >= 2) c0 = blk_scatter_avx512(b, t, out, ros, rv, cv);
    if (simd) c0 = blk_scatter_avx2(b, t, out, ros, rv, cv, c0);
#endif
    blk_scatter_scalar(b, t, out, ros, rv, cv, c0);
    /* streamed: the plain rows were built whole in T2 and leave as contiguous runs */
    if (nt)
        for (int64_t r = 0; r < rv; r++)
            blk_copy_out(rows + r * b->rs * e, T2 + r * b->C * e, cv * e, 1, simd);
}

#endif
