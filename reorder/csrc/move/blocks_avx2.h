/* The block kernel's AVX2 paths (simd = 1): register-transposed tiles, the il = 2 and 4
 * interleaves, and the streaming copy out. */
#ifndef REORDER_MOVE_BLOCKS_AVX2_H
#define REORDER_MOVE_BLOCKS_AVX2_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/block_layout.h"

#if REORDER_X86
/* N x N tiles of N-element registers V (8 dwords or 4 qwords in __m256i, 16 floats in
 * __m512) through the transpose TR: plain rows to scratch rows (gather; rows past rv load as
 * zeros), and back (scatter). LD(p), ST(p, v), ZERO: the register's unaligned load, store
 * and zero. */
#define BLK_LD256(p) _mm256_loadu_si256((const __m256i*)(p))
#define BLK_ST256(p, x) _mm256_storeu_si256((__m256i*)(p), x)
#define BLK_GATHER_SQUARE(W, N, TR, V, LD, ST, ZERO)                                       \
    const W* s = (const W*)rows;                                                            \
    W* t = (W*)T;                                                                           \
    V v[N];                                                                                 \
    for (; c0 + N <= cv; c0 += N)                                                           \
        for (int64_t g = 0; g < R; g += N) {                                                \
            for (int i = 0; i < N; i++)                                                     \
                v[i] = g + i < rv ? LD(s + (g + i) * rs + c0) : ZERO;                       \
            TR(v);                                                                          \
            for (int j = 0; j < N; j++) ST(t + (int64_t)q[c0 + j] * R + g, v[j]);           \
        }
#define BLK_SCATTER_SQUARE(W, N, TR, V, LD, ST)                                             \
    const W* t = (const W*)T;                                                               \
    W* d = (W*)rows;                                                                        \
    V v[N];                                                                                 \
    for (; c0 + N <= cv; c0 += N)                                                           \
        for (int64_t g = 0; g < rv; g += N) {                                               \
            for (int i = 0; i < N; i++) v[i] = LD(t + (int64_t)q[c0 + i] * R + g);          \
            TR(v);                                                                          \
            for (int j = 0; j < N && g + j < rv; j++) ST(d + (g + j) * ros + c0, v[j]);     \
        }

/* Stage 1, plain -> blocked, AVX2: full tiles of valid columns (4x4 qwords, 8x8 dwords,
 * 16x8 words in 128-bit lanes, 16x16 bytes); returns the first column left for the
 * portable loop. */
__attribute__((target("avx2")))
static int64_t blk_gather_avx2(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv,
                               int64_t c0) {
    const int64_t R = b->R, rs = b->rs;
    const int32_t* q = b->q;
    if (b->esize == 4 && R % 8 == 0) {
        BLK_GATHER_SQUARE(uint32_t, 8, avx2_tr8x8_epi32, __m256i, BLK_LD256, BLK_ST256, _mm256_setzero_si256());
    } else if (b->esize == 8 && R % 4 == 0) {
        BLK_GATHER_SQUARE(uint64_t, 4, avx2_tr4x4_epi64, __m256i, BLK_LD256, BLK_ST256, _mm256_setzero_si256());
    } else if (b->esize == 2 && R % 16 == 0) {
        const uint16_t* s = (const uint16_t*)rows;
        uint16_t* t = (uint16_t*)T;
        __m256i v[8];
        const __m128i z = _mm_setzero_si128();
        for (; c0 + 8 <= cv; c0 += 8)
            for (int64_t g = 0; g < R; g += 16) {
                for (int i = 0; i < 8; i++) {
                    __m128i lo = g + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + i) * rs + c0)) : z;
                    __m128i hi = g + 8 + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + 8 + i) * rs + c0)) : z;
                    v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
                avx2_tr8x8_epi16_lanes(v);
                for (int j = 0; j < 8; j++)
                    _mm256_storeu_si256((__m256i*)(t + (int64_t)q[c0 + j] * R + g), v[j]);
            }
    } else if (b->esize == 1 && R % 16 == 0) {
        /* 16 x 16 byte tiles in eight registers (lane 0 row i, lane 1 row 8 + i): no spills */
        const uint8_t* s = (const uint8_t*)rows;
        uint8_t* t = (uint8_t*)T;
        __m256i v[8];
        const __m128i z = _mm_setzero_si128();
        for (; c0 + 16 <= cv; c0 += 16)
            for (int64_t g = 0; g < R; g += 16) {
                for (int i = 0; i < 8; i++) {
                    __m128i lo = g + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + i) * rs + c0)) : z;
                    __m128i hi = g + 8 + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + 8 + i) * rs + c0)) : z;
                    v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
                avx2_tr16x16_epi8(v);
                for (int j = 0; j < 8; j++) {
                    _mm_storeu_si128((__m128i*)(t + (int64_t)q[c0 + 2 * j] * R + g), _mm256_castsi256_si128(v[j]));
                    _mm_storeu_si128((__m128i*)(t + (int64_t)q[c0 + 2 * j + 1] * R + g),
                                     _mm256_extracti128_si256(v[j], 1));
                }
            }
    }
    return c0;
}

/* Stage 2, blocked -> plain, AVX2: plain rows [0, rv) x full tiles of columns [0, cv) from
 * T, rows at stride ros; returns the first column left for the portable loop. */
__attribute__((target("avx2")))
static int64_t blk_scatter_avx2(const blk_t* b, const char* T, char* rows, int64_t ros,
                                int64_t rv, int64_t cv, int64_t c0) {
    const int64_t R = b->R;
    const int32_t* q = b->q;
    if (b->esize == 4 && R % 8 == 0) {
        BLK_SCATTER_SQUARE(uint32_t, 8, avx2_tr8x8_epi32, __m256i, BLK_LD256, BLK_ST256);
    } else if (b->esize == 8 && R % 4 == 0) {
        BLK_SCATTER_SQUARE(uint64_t, 4, avx2_tr4x4_epi64, __m256i, BLK_LD256, BLK_ST256);
    } else if (b->esize == 2 && R % 16 == 0) {
        const uint16_t* t = (const uint16_t*)T;
        uint16_t* d = (uint16_t*)rows;
        __m256i v[8];
        for (; c0 + 8 <= cv; c0 += 8)
            for (int64_t g = 0; g < rv; g += 16) {
                for (int i = 0; i < 8; i++)
                    v[i] = _mm256_loadu_si256((const __m256i*)(t + (int64_t)q[c0 + i] * R + g));
                avx2_tr8x8_epi16_lanes(v);
                for (int j = 0; j < 8; j++) {
                    if (g + j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + j) * ros + c0), _mm256_castsi256_si128(v[j]));
                    if (g + 8 + j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 8 + j) * ros + c0), _mm256_extracti128_si256(v[j], 1));
                }
            }
    } else if (b->esize == 1 && R % 16 == 0) {
        const uint8_t* t = (const uint8_t*)T;
        uint8_t* d = (uint8_t*)rows;
        __m256i v[8];
        for (; c0 + 16 <= cv; c0 += 16)
            for (int64_t g = 0; g < rv; g += 16) {
                for (int i = 0; i < 8; i++)
                    v[i] = _mm256_loadu2_m128i((const __m128i*)(t + (int64_t)q[c0 + 8 + i] * R + g),
                                               (const __m128i*)(t + (int64_t)q[c0 + i] * R + g));
                avx2_tr16x16_epi8(v);
                for (int j = 0; j < 8; j++) {
                    if (g + 2 * j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 2 * j) * ros + c0), _mm256_castsi256_si128(v[j]));
                    if (g + 2 * j + 1 < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 2 * j + 1) * ros + c0),
                                         _mm256_extracti128_si256(v[j], 1));
                }
            }
    }
    return c0;
}

/* il = 4: 32-bit units (an f32, a pair of words, a quad of bytes) per (r-unit, j); the
 * byte-shuffles turn 16 bytes of [r-unit][j] into [j][r-unit] within each unit group. */
__attribute__((target("avx2")))
static inline __m256i blk_fix(__m256i v, int e, int to_blocked) {
    if (e == 2)
        return _mm256_shuffle_epi8(v, to_blocked
            ? _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                               0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15)
            : _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                               0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
    if (e == 1)
        return _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                                       0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    return v;
}

/* R * esize a multiple of 32 (else returns 0 and the portable loop runs). */
__attribute__((target("avx2")))
static int blk_interleave4_avx2(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row % 32) return 0;
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 4 * row;
        char* o = out + g * 4 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i x[4];
            for (int j = 0; j < 4; j++) x[j] = _mm256_loadu_si256((const __m256i*)(t + j * row + k));
            avx2_tr4x4_epi32_lanes(x);   /* x[m]: unit m | unit m+4, each as [j][r-unit] */
            __m256i o0 = _mm256_permute2x128_si256(x[0], x[1], 0x20);
            __m256i o1 = _mm256_permute2x128_si256(x[2], x[3], 0x20);
            __m256i o2 = _mm256_permute2x128_si256(x[0], x[1], 0x31);
            __m256i o3 = _mm256_permute2x128_si256(x[2], x[3], 0x31);
            _mm256_storeu_si256((__m256i*)(o + 4 * k), blk_fix(o0, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 32), blk_fix(o1, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 64), blk_fix(o2, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 96), blk_fix(o3, b->esize, 1));
        }
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave4_avx2(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row % 32) return 0;
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 4 * row;
        char* t = T + g * 4 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i v[4], x[4];
            for (int m = 0; m < 4; m++)
                v[m] = blk_fix(_mm256_loadu_si256((const __m256i*)(s + 4 * k + 32 * m)), b->esize, 0);
            x[0] = _mm256_permute2x128_si256(v[0], v[2], 0x20);
            x[1] = _mm256_permute2x128_si256(v[0], v[2], 0x31);
            x[2] = _mm256_permute2x128_si256(v[1], v[3], 0x20);
            x[3] = _mm256_permute2x128_si256(v[1], v[3], 0x31);
            avx2_tr4x4_epi32_lanes(x);
            for (int j = 0; j < 4; j++) _mm256_storeu_si256((__m256i*)(t + j * row + k), x[j]);
        }
    }
    return 1;
}

/* il = 4 for 8-byte elements: a 4x4 qword transpose takes 4 r of 4 scratch rows to the
 * 4 [r][j] runs of 32 bytes (to_blocked: from the scratch s to the block d), or back. */
__attribute__((target("avx2")))
static int blk_interleave4_q(const blk_t* b, const char* s, char* d, int to_blocked) {
    const int64_t R = b->R, n = R * b->C;
    if (R % 4) return 0;
    const uint64_t* src = (const uint64_t*)s;
    uint64_t* dst = (uint64_t*)d;
    __m256i x[4];
    for (int64_t g = 0; g < n; g += 4 * R)
        for (int64_t r = 0; r < R; r += 4) {
            /* scratch rows g + i * R, elements r..r+3 <-> blocked runs g + (r + i) * 4 */
            for (int i = 0; i < 4; i++)
                x[i] = _mm256_loadu_si256((const __m256i*)(src + (to_blocked ? g + i * R + r
                                                                            : g + (r + i) * 4)));
            avx2_tr4x4_epi64(x);
            for (int i = 0; i < 4; i++) {
                uint64_t* o = dst + (to_blocked ? g + (r + i) * 4 : g + i * R + r);
                _mm256_storeu_si256((__m256i*)o, x[i]);
            }
        }
    return 1;
}

/* The same with 16-byte rows (16 bytes of R = 16). */
__attribute__((target("avx2")))
static int blk_interleave4_sse(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row != 16 || b->esize != 1) return 0;
    const __m128i fix = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 64;
        char* o = out + g * 64;
        __m128i a0 = _mm_loadu_si128((const __m128i*)t), a1 = _mm_loadu_si128((const __m128i*)(t + 16));
        __m128i a2 = _mm_loadu_si128((const __m128i*)(t + 32)), a3 = _mm_loadu_si128((const __m128i*)(t + 48));
        __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpackhi_epi32(a0, a1);
        __m128i t2 = _mm_unpacklo_epi32(a2, a3), t3 = _mm_unpackhi_epi32(a2, a3);
        _mm_storeu_si128((__m128i*)o, _mm_shuffle_epi8(_mm_unpacklo_epi64(t0, t2), fix));
        _mm_storeu_si128((__m128i*)(o + 16), _mm_shuffle_epi8(_mm_unpackhi_epi64(t0, t2), fix));
        _mm_storeu_si128((__m128i*)(o + 32), _mm_shuffle_epi8(_mm_unpacklo_epi64(t1, t3), fix));
        _mm_storeu_si128((__m128i*)(o + 48), _mm_shuffle_epi8(_mm_unpackhi_epi64(t1, t3), fix));
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave4_sse(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row != 16 || b->esize != 1) return 0;
    const __m128i fix = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 64;
        char* t = T + g * 64;
        __m128i a0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)s), fix);
        __m128i a1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 16)), fix);
        __m128i a2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 32)), fix);
        __m128i a3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 48)), fix);
        __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpackhi_epi32(a0, a1);
        __m128i t2 = _mm_unpacklo_epi32(a2, a3), t3 = _mm_unpackhi_epi32(a2, a3);
        _mm_storeu_si128((__m128i*)t, _mm_unpacklo_epi64(t0, t2));
        _mm_storeu_si128((__m128i*)(t + 16), _mm_unpackhi_epi64(t0, t2));
        _mm_storeu_si128((__m128i*)(t + 32), _mm_unpacklo_epi64(t1, t3));
        _mm_storeu_si128((__m128i*)(t + 48), _mm_unpackhi_epi64(t1, t3));
    }
    return 1;
}

/* Byte shuffle, within each 16-byte lane, of pairs of e-byte elements: `join` 0 gathers
 * the pairs' first elements into the low 8 bytes and the second into the high 8; 1 undoes it. */
__attribute__((target("avx2")))
static inline __m256i blk_pair_mask(int e, int join) {
    uint8_t m[32];
    for (int p = 0; p < 16; p++) {
        int half = p / 8, k = p % 8;
        int from = (k / e) * 2 * e + half * e + k % e;
        if (join) m[from] = m[16 + from] = (uint8_t)p;
        else m[p] = m[16 + p] = (uint8_t)from;
    }
    return _mm256_loadu_si256((const __m256i*)m);
}

/* il = 2 (OIhw8i16o2i): rows j = 0, 1 of each group zipped element by element. Within each
 * 16-byte lane the pairs' first elements gather into the low 8 bytes and the second into
 * the high 8 (one byte shuffle), and 64-bit unpacks with a qword permute put the halves of
 * the two rows in order; the interleave runs the same steps backwards. R * esize a
 * multiple of 32 (else returns 0 and the portable loop runs). */
__attribute__((target("avx2")))
static int blk_interleave2_avx2(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 2;
    const int e = b->esize;
    if (row % 32) return 0;
    const __m256i join = blk_pair_mask(e, 1);
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 2 * row;
        char* o = out + g * 2 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i x = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i*)(t + k)), 0xD8);
            __m256i y = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i*)(t + row + k)), 0xD8);
            __m256i v0 = _mm256_unpacklo_epi64(x, y), v1 = _mm256_unpackhi_epi64(x, y);
            if (e < 8) {
                v0 = _mm256_shuffle_epi8(v0, join);
                v1 = _mm256_shuffle_epi8(v1, join);
            }
            _mm256_storeu_si256((__m256i*)(o + 2 * k), v0);
            _mm256_storeu_si256((__m256i*)(o + 2 * k + 32), v1);
        }
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave2_avx2(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 2;
    const int e = b->esize;
    if (row % 32) return 0;
    const __m256i split = blk_pair_mask(e, 0);
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 2 * row;
        char* t = T + g * 2 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i v0 = _mm256_loadu_si256((const __m256i*)(s + 2 * k));
            __m256i v1 = _mm256_loadu_si256((const __m256i*)(s + 2 * k + 32));
            if (e < 8) {
                v0 = _mm256_shuffle_epi8(v0, split);
                v1 = _mm256_shuffle_epi8(v1, split);
            }
            _mm256_storeu_si256((__m256i*)(t + k),
                                _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(v0, v1), 0xD8));
            _mm256_storeu_si256((__m256i*)(t + row + k),
                                _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(v0, v1), 0xD8));
        }
    }
    return 1;
}


__attribute__((target("avx2")))
static void blk_stream_avx2(char* d, const char* s, int64_t n) {
    int64_t head = (64 - ((uintptr_t)d & 63)) & 63;
    if (head > n) head = n;
    memcpy(d, s, head);
    int64_t k = head;
    for (; k + 64 <= n; k += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i*)(s + k));
        __m256i c = _mm256_loadu_si256((const __m256i*)(s + k + 32));
        _mm256_stream_si256((__m256i*)(d + k), a);
        _mm256_stream_si256((__m256i*)(d + k + 32), c);
    }
    memcpy(d + k, s + k, n - k);
}
#endif

#endif
