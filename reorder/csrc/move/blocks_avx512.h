/* The block kernel's AVX-512 paths (simd = 2, F, BW, VBMI): the byte-permute interleaves,
 * 16 x 16 tiles of 4-byte elements, and the register path that moves blocks of 16 rows of 1-
 * and 2-byte elements a segment of columns at a time. */
#ifndef REORDER_MOVE_BLOCKS_AVX512_H
#define REORDER_MOVE_BLOCKS_AVX512_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/block_layout.h"
#include "move/blocks_avx2.h"      /* BLK_GATHER_SQUARE, BLK_SCATTER_SQUARE */

#if REORDER_X86
/* ---- AVX-512 (F, BW, VBMI) --------------------------------------------------------------
 * il = 4, groups of 4 scratch rows of 16 or 32 bytes: one (two) byte permutes per 64 bytes,
 * through the tables of blk_prepare. (16 x 64 byte tiles in four in-lane unpack rounds were
 * measured slower than the AVX2 16 x 16 tiles on Zen 4 and are not here: docs/kernels.md.) */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int blk_interleave4_vbmi(const blk_t* b, const char* in, char* out, int to_blocked) {
    const int64_t gsize = b->ix_bytes, n = b->R * b->C * b->esize;
    const uint8_t* ix = b->ix[to_blocked ? 0 : 1];
    if (gsize == 0) return 0;
    const __m512i i0 = _mm512_loadu_si512((const void*)ix);
    if (gsize == 64) {
        for (int64_t k = 0; k < n; k += 64) {
            const __m512i v = _mm512_loadu_si512((const void*)(in + k));
            _mm512_storeu_si512((void*)(out + k), _mm512_permutexvar_epi8(i0, v));
        }
    } else {
        const __m512i i1 = _mm512_loadu_si512((const void*)(ix + 64));
        for (int64_t k = 0; k < n; k += 128) {
            __m512i lo = _mm512_loadu_si512((const void*)(in + k));
            __m512i hi = _mm512_loadu_si512((const void*)(in + k + 64));
            _mm512_storeu_si512((void*)(out + k), _mm512_permutex2var_epi8(lo, i0, hi));
            _mm512_storeu_si512((void*)(out + k + 64), _mm512_permutex2var_epi8(lo, i1, hi));
        }
    }
    return 1;
}

/* 4-byte elements, R a multiple of 16: 16 x 16 tiles in zmm registers (half the loads and
 * stores of the AVX2 8 x 8 ones). Gather and scatter as the AVX2 stages; each returns the
 * first column left. */
__attribute__((target("avx512f")))
static int64_t blk_gather_avx512(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv) {
    const int64_t R = b->R, rs = b->rs;
    const int32_t* q = b->q;
    int64_t c0 = 0;
    if (b->esize != 4 || R % 16) return 0;
    BLK_GATHER_SQUARE(float, 16, tr16x16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_setzero_ps());
    return c0;
}

__attribute__((target("avx512f")))
static int64_t blk_scatter_avx512(const blk_t* b, const char* T, char* rows, int64_t ros,
                                  int64_t rv, int64_t cv) {
    const int64_t R = b->R;
    const int32_t* q = b->q;
    int64_t c0 = 0;
    if (b->esize != 4 || R % 16) return 0;
    BLK_SCATTER_SQUARE(float, 16, tr16x16, __m512, _mm512_loadu_ps, _mm512_storeu_ps);
    return c0;
}

/* il = 4 for 4-byte elements, R a multiple of 16: four scratch rows of 16 elements (one zmm
 * each) to 16 [r][4] quads by in-lane 4 x 4 transposes and then a 4 x 4 transpose of lanes;
 * back, the same two in the other order. */
__attribute__((target("avx512f")))
static inline void blk_lanes4(__m512i v[4]) {
    const __m512i a = _mm512_shuffle_i32x4(v[0], v[1], 0x44), c = _mm512_shuffle_i32x4(v[0], v[1], 0xEE);
    const __m512i e = _mm512_shuffle_i32x4(v[2], v[3], 0x44), f = _mm512_shuffle_i32x4(v[2], v[3], 0xEE);
    v[0] = _mm512_shuffle_i32x4(a, e, 0x88);
    v[1] = _mm512_shuffle_i32x4(a, e, 0xDD);
    v[2] = _mm512_shuffle_i32x4(c, f, 0x88);
    v[3] = _mm512_shuffle_i32x4(c, f, 0xDD);
}

/* in-lane 4 x 4 dword transposes across v[0..3] (dword j of lane g of v[l] <-> dword l of
 * lane g of v[j]) */
__attribute__((target("avx512f")))
static inline void blk_inlane4(__m512i v[4]) {
    const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm512_unpacklo_epi64(t0, t2);
    v[1] = _mm512_unpackhi_epi64(t0, t2);
    v[2] = _mm512_unpacklo_epi64(t1, t3);
    v[3] = _mm512_unpackhi_epi64(t1, t3);
}

__attribute__((target("avx512f")))
static int blk_interleave4_avx512(const blk_t* b, const char* in, char* out, int to_blocked) {
    const int64_t R = b->R, n = R * b->C * 4;
    if (b->esize != 4 || R % 16) return 0;
    for (int64_t g = 0; g < n; g += 4 * R * 4)
        for (int64_t r = 0; r < R; r += 16) {
            __m512i v[4];
            /* scratch row j's 16 elements at (j * R + r) * 4, their quads at r * 16 + 64 j */
            for (int j = 0; j < 4; j++)
                v[j] = _mm512_loadu_si512((const void*)(in + g + (to_blocked ? (j * R + r) * 4 : r * 16 + 64 * j)));
            if (to_blocked) {
                blk_inlane4(v);
                blk_lanes4(v);
            } else {
                blk_lanes4(v);
                blk_inlane4(v);
            }
            for (int j = 0; j < 4; j++)
                _mm512_storeu_si512((void*)(out + g + (to_blocked ? r * 16 + 64 * j : (j * R + r) * 4)), v[j]);
        }
    return 1;
}

/* The register path (blk_prepare_regs), for blocks of 16 rows of 1- or 2-byte elements, a
 * segment of columns at a time: each plain row's segment, in at most five registers, is
 * permuted into scratch order (two-source byte permutes and blends, at most four shuffles a
 * 64 bytes; none where the column map is the identity: activations); then a 16 x 16 dword
 * transpose across the rows turns 64 bytes of scratch order, 16 scratch rows, into groups of
 * [r][a dword of scratch rows], which is the 4i16o4i order of bytes and the 8i16o2i order of
 * words (other il: one more byte permute a register; 4i16o4i words: pairs of registers
 * interleaved dword by dword, blk_regs_pair_out). The rows' chunks wait in T between the
 * two stages, as whole registers, so the loads forward from the stores.
 * A chunk of at most 4 dwords (3x3 blocks end with one) takes an in-lane 4 x 4 transpose
 * of four registers of four rows each in place of the 16 x 16; going to the blocked side
 * those four registers are built as the rows are permuted and never pass through T (a zmm
 * store and the load it forwards to cost about 2 cycles here, against 1 for a store). A
 * segment whose width is not a multiple of 4 (il 1 and 2: 7x7 planes) ends in a register
 * stored, or loaded, in part. */
#define BLK_REGS_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define BLK_REGS_INLINE BLK_REGS_TARGET static inline __attribute__((always_inline))

/* The K chunks' tables in registers (K, a constant, is the row's count of 64-byte registers). */
typedef struct {
    __m512i i0[5], i1[5], i2[5];
    __mmask64 m1[5], m2[5];
} blk_regs_ix;

BLK_REGS_INLINE void blk_regs_tables(const blk_t* b, int dir, const int K, blk_regs_ix* x) {
    for (int k = 0; k < K; k++) {
        x->i0[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][0]);
        if (K >= 3) {
            x->i1[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][1]);
            x->m1[k] = (__mmask64)b->rm[dir][k][0];
        }
        if (K >= 5) {
            x->i2[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][2]);
            x->m2[k] = (__mmask64)b->rm[dir][k][1];
        }
    }
}

/* chunk k of the output from the K source registers s */
BLK_REGS_INLINE __m512i blk_regs_permute(const blk_regs_ix* x, const int K, int k, const __m512i* s) {
    if (K == 1) return _mm512_permutexvar_epi8(x->i0[k], s[0]);
    __m512i v = _mm512_permutex2var_epi8(s[0], x->i0[k], s[1]);
    if (K == 2) return v;
    if (K == 3) return _mm512_mask_permutexvar_epi8(v, x->m1[k], x->i1[k], s[2]);
    v = _mm512_mask_blend_epi8(x->m1[k], v, _mm512_permutex2var_epi8(s[2], x->i1[k], s[3]));
    if (K == 4) return v;
    return _mm512_mask_permutexvar_epi8(v, x->m2[k], x->i2[k], s[4]);
}

static inline __mmask64 blk_regs_mask(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : n <= 0 ? 0 : (((__mmask64)1 << n) - 1);
}

/* The relabel of a block's transposed registers: 0 none (4i16o4i bytes, 8i16o2i words), 1 a
 * byte permute a register (lx), 2 pairs of registers, each a dword of 16 rows, interleaved
 * dword by dword into 16 [r][2 dwords] (4i16o4i words) and back. */
static inline int blk_regs_relabel(const blk_t* b) {
    return b->il * b->esize == 8 ? 2 : b->il * b->esize != 4;
}

BLK_REGS_INLINE void blk_regs_pair_out(char* o, __m512i a, __m512i c) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    _mm512_storeu_si512((void*)o, _mm512_permutex2var_epi32(a, lo, c));
    _mm512_storeu_si512((void*)(o + 64), _mm512_permutex2var_epi32(a, hi, c));
}

BLK_REGS_INLINE void blk_regs_pair_in(const char* in, __m512i* a, __m512i* c) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i x = _mm512_loadu_si512((const void*)in), y = _mm512_loadu_si512((const void*)(in + 64));
    *a = _mm512_permutex2var_epi32(x, ev, y);
    *c = _mm512_permutex2var_epi32(x, od, y);
}

/* one blocked register, n of its bytes (n < 64: a segment's last, part of it past C) */
BLK_REGS_INLINE void blk_regs_put(char* o, int64_t n, int relabel, __m512i lx, __m512i v) {
    if (relabel) v = _mm512_permutexvar_epi8(lx, v);
    if (n >= 64) _mm512_storeu_si512((void*)o, v);
    else _mm512_mask_storeu_epi8(o, blk_regs_mask(n), v);
}

BLK_REGS_INLINE __m512i blk_regs_get(const char* in, int64_t n, int relabel, __m512i lx) {
    const __m512i v = n >= 64 ? _mm512_loadu_si512((const void*)in) : _mm512_maskz_loadu_epi8(blk_regs_mask(n), in);
    return relabel ? _mm512_permutexvar_epi8(lx, v) : v;
}

/* transposed registers v[0..n) -> their nb bytes of the blocked block at o, relabelled
 * (nb: whole pairs for relabel 2) */
BLK_REGS_INLINE void blk_regs_store(char* o, int64_t nb, int relabel, __m512i lx, const __m512i* v,
                                    const int n) {
    for (int u = 0; u < n; u++) {
        if (64 * u >= nb) break;
        if (relabel != 2) blk_regs_put(o + u * 64, nb - 64 * u, relabel, lx, v[u]);
        else if (u % 2 == 0) blk_regs_pair_out(o + u * 64, v[u], v[u + 1]);
    }
}

/* nb bytes of the blocked block at in -> transposed registers v[0..16), zeros past nb */
BLK_REGS_INLINE void blk_regs_load(const char* in, int64_t nb, int relabel, __m512i lx, __m512i* v) {
    for (int u = 0; u < 16; u++) {
        if (relabel != 2)
            v[u] = 64 * u < nb ? blk_regs_get(in + u * 64, nb - 64 * u, relabel, lx) : _mm512_setzero_si512();
        else if (u % 2 == 0 && 64 * u < nb)
            blk_regs_pair_in(in + u * 64, &v[u], &v[u + 1]);
        else if (u % 2 == 0)
            v[u] = v[u + 1] = _mm512_setzero_si512();
    }
}

/* the chunk at t (16 rows 64 bytes apart) -> its nb bytes of the blocked block at o */
BLK_REGS_INLINE void blk_regs_chunk_out(const char* t, char* o, int64_t nb, int relabel, __m512i lx) {
    __m512i v[16];
    for (int r = 0; r < 16; r++) v[r] = _mm512_load_si512((const void*)(t + r * 64));
    tr16x16((__m512*)v);
    blk_regs_store(o, nb, relabel, lx, v, 16);
}

/* nb bytes of the blocked block at in -> the chunk's 16 rows at t */
BLK_REGS_INLINE void blk_regs_chunk_in(const char* in, char* t, int64_t nb, int relabel, __m512i lx) {
    __m512i v[16];
    if (nb == 1024) {
        /* a whole chunk, as most are: no bounds to test (the constant folds them away) */
        blk_regs_load(in, 1024, relabel, lx, v);
        tr16x16((__m512*)v);
        for (int r = 0; r < 16; r++) _mm512_store_si512((void*)(t + r * 64), v[r]);
        return;
    }
    blk_regs_load(in, nb, relabel, lx, v);
    if (nb <= 256) {
        blk_inlane4(v);
        for (int l = 0; l < 4; l++) {
            _mm_store_si128((__m128i*)(t + l * 64), _mm512_castsi512_si128(v[l]));
            _mm_store_si128((__m128i*)(t + (4 + l) * 64), _mm512_extracti32x4_epi32(v[l], 1));
            _mm_store_si128((__m128i*)(t + (8 + l) * 64), _mm512_extracti32x4_epi32(v[l], 2));
            _mm_store_si128((__m128i*)(t + (12 + l) * 64), _mm512_extracti32x4_epi32(v[l], 3));
        }
    } else {
        tr16x16((__m512*)v);
        for (int r = 0; r < 16; r++) _mm512_store_si512((void*)(t + r * 64), v[r]);
    }
}

/* A segment's tables (dir 0 to the blocked side, 1 back) and its rows' chunk masks for cv
 * valid columns; returns cv in bytes, at most the segment's. */
BLK_REGS_INLINE int64_t blk_regs_segment(const blk_t* b, int dir, const int K, int64_t cv,
                                         blk_regs_ix* x, __mmask64* lm) {
    const int64_t C = b->vw * b->esize;
    cv = cv * b->esize < C ? cv * b->esize : C;
    blk_regs_tables(b, dir, K, x);
    for (int k = 0; k < K; k++) lm[k] = blk_regs_mask(cv - 64 * k);
    return cv;
}

/* plain rows (rs apart, rows [0, rv) x columns [0, cv) valid) -> the blocked block at out;
 * chunk k of row r waits in T at (k * 16 + r) * 64 */
BLK_REGS_INLINE void blk_to_blocked_regs_k(const blk_t* b, const int K, const char* rows,
                                           char* out, int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize, C = b->vw * e, rs = b->rs * e;
    const int relabel = blk_regs_relabel(b);
    blk_regs_ix x;
    __mmask64 lm[5];
    __m512i s[5];
    cv = blk_regs_segment(b, 0, K, cv, &x, lm);
    /* a last chunk of at most 4 dwords stays in registers: w[l], lane g = row 4g + l */
    const int short_last = C - 64 * (K - 1) <= 16;
    const int KT = short_last ? K - 1 : K;
    __m512i w[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
    for (int64_t g = 0; g < 4; g++) {
        const __mmask16 lane = (__mmask16)(0xF << (4 * g));
        for (int l = 0; l < 4; l++) {
            const int64_t r = 4 * g + l;
            if (r < rv) {
                const char* row = rows + r * rs;
                for (int k = 0; k < K; k++) s[k] = _mm512_maskz_loadu_epi8(lm[k], row + 64 * k);
                for (int k = 0; k < KT; k++)
                    _mm512_store_si512((void*)(T + (k * 16 + r) * 64), blk_regs_permute(&x, K, k, s));
                if (short_last)
                    w[l] = _mm512_mask_broadcast_i32x4(
                        w[l], lane, _mm512_castsi512_si128(blk_regs_permute(&x, K, K - 1, s)));
            } else {
                for (int k = 0; k < KT; k++)
                    _mm512_store_si512((void*)(T + (k * 16 + r) * 64), _mm512_setzero_si512());
            }
        }
    }
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[0]);
    for (int k = 0; k < KT; k++) {
        const int64_t nb = k < K - 1 ? 1024 : 16 * (C - 64 * k);
        blk_regs_chunk_out(T + k * 16 * 64, out + k * 16 * 64, nb, relabel, lx);
    }
    if (short_last) {
        const int64_t nb = 16 * (C - 64 * (K - 1));
        char* o = out + (K - 1) * 16 * 64;
        blk_inlane4(w);
        blk_regs_store(o, nb, relabel, lx, w, 4);
    }
}

/* the blocked block at src -> plain rows [0, rv) x columns [0, cv), ros apart */
BLK_REGS_INLINE void blk_to_plain_regs_k(const blk_t* b, const int K, const char* src, char* rows,
                                         int64_t ros, int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize, C = b->vw * e;
    const int relabel = blk_regs_relabel(b);
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[1]);
    ros *= e;
    for (int k = 0; k < K; k++) {
        /* (every chunk but the last is whole: a constant, so one copy of the code a chunk) */
        const int64_t nb = k < K - 1 ? 1024 : 16 * (C - 64 * k);
        blk_regs_chunk_in(src + k * 16 * 64, T + k * 16 * 64, nb, relabel, lx);
    }
    blk_regs_ix x;
    __mmask64 lm[5];
    __m512i s[5];
    cv = blk_regs_segment(b, 1, K, cv, &x, lm);
    const int short_last = C - 64 * (K - 1) <= 16;
    for (int64_t r = 0; r < rv; r++) {
        for (int k = 0; k < K; k++) {
            const char* t = T + (k * 16 + r) * 64;
            s[k] = k == K - 1 && short_last ? _mm512_zextsi128_si512(_mm_load_si128((const __m128i*)t))
                                            : _mm512_load_si512((const void*)t);
        }
        char* row = rows + r * ros;
        for (int k = 0; k < K; k++)
            if (lm[k]) _mm512_mask_storeu_epi8(row + 64 * k, lm[k], blk_regs_permute(&x, K, k, s));
    }
}

/* The identity map (activations): the rows are the scratch rows, each chunk straight from
 * them into the transposes (to the blocked side) or from the transposes into them (back);
 * C and cv in bytes, rs the rows' stride in bytes. */
BLK_REGS_INLINE void blk_regs_identity_dir(const blk_t* b, const char* in, char* out, int64_t rs,
                                           int64_t rv, int64_t cv, int64_t C, const int to_blocked) {
    const int relabel = blk_regs_relabel(b);
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[to_blocked ? 0 : 1]);
    if (cv > C) cv = C;
    for (int64_t k = 0; 64 * k < (to_blocked ? C : cv); k++) {
        const __mmask64 m = blk_regs_mask(cv - 64 * k);
        const int64_t nb = 16 * (C - 64 * k) < 1024 ? 16 * (C - 64 * k) : 1024;
        __m512i v[16];
        if (to_blocked)
            for (int r = 0; r < 16; r++)
                v[r] = r < rv ? _mm512_maskz_loadu_epi8(m, in + r * rs + 64 * k) : _mm512_setzero_si512();
        else
            blk_regs_load(in + k * 1024, nb, relabel, lx, v);
        tr16x16((__m512*)v);
        if (to_blocked)
            blk_regs_store(out + k * 1024, nb, relabel, lx, v, 16);
        else
            for (int r = 0; r < 16 && r < rv; r++) _mm512_mask_storeu_epi8(out + r * rs + 64 * k, m, v[r]);
    }
}

BLK_REGS_TARGET
static void blk_regs_identity(const blk_t* b, const char* in, char* out, int64_t rs, int64_t rv,
                              int64_t cv, int64_t C, int to_blocked) {
    if (to_blocked) blk_regs_identity_dir(b, in, out, rs, rv, cv, C, 1);
    else blk_regs_identity_dir(b, in, out, rs, rv, cv, C, 0);
}

/* CALL(K) for the block's count of registers a segment row, a constant in each */
#define BLK_REGS_BY_K(vk, CALL)                                                             \
    switch (vk) {                                                                           \
    case 1: CALL(1); break;                                                                 \
    case 2: CALL(2); break;                                                                 \
    case 3: CALL(3); break;                                                                 \
    case 4: CALL(4); break;                                                                 \
    default: CALL(5); break;                                                                \
    }

/* the block, a segment of vw columns at a time (a segment past cv is all padding) */
BLK_REGS_TARGET
static void blk_to_blocked_regs(const blk_t* b, const char* rows, char* out, int64_t rv,
                                int64_t cv, char* T) {
    const int64_t e = b->esize;
    if (b->vid) {
        blk_regs_identity(b, rows, out, b->rs * e, rv, cv * e, b->C * e, 1);
        return;
    }
    for (int64_t c = 0; c < b->C; c += b->vw) {
#define BLK_CALL(K) blk_to_blocked_regs_k(b, K, rows + c * e, out + c * 16 * e, rv, cv - c, T)
        BLK_REGS_BY_K(b->vk, BLK_CALL)
#undef BLK_CALL
    }
}

BLK_REGS_TARGET
static void blk_to_plain_regs(const blk_t* b, const char* src, char* rows, int64_t ros,
                              int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize;
    if (b->vid) {
        blk_regs_identity(b, src, rows, ros * e, rv, cv * e, b->C * e, 0);
        return;
    }
    for (int64_t c = 0; c < cv; c += b->vw) {
#define BLK_CALL(K) blk_to_plain_regs_k(b, K, src + c * 16 * e, rows + c * e, ros, rv, cv - c, T)
        BLK_REGS_BY_K(b->vk, BLK_CALL)
#undef BLK_CALL
    }
}
#endif

#endif
