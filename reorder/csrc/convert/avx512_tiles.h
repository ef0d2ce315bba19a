/* AVX-512 conversion tiles: 16 lanes of destination-contiguous elements along a source-
 * contiguous run, transposed in registers and converted there (RQ_TILE, RQ_TILES_FOR). */
#ifndef REORDER_CONVERT_AVX512_TILES_H
#define REORDER_CONVERT_AVX512_TILES_H
#include "convert/x86.h"
#include "convert/avx512_loads_stores.h"

#if RQ_X86
/* the first `n` lane groups from g all valid */
static inline int rq_full_groups(const uint16_t* lanes, int64_t g, int64_t n) {
    uint16_t all = 0xffff;
    for (int64_t i = 0; i < n; i++) all &= lanes[g + i];
    return all == 0xffff;
}
/* whole chunks of columns, no padding columns, every lane of the position valid */
static inline int rq_whole(const rq_block_t* k) {
    return k->nbv == k->nbw && k->nbv > 0 && k->nbv % 16 == 0
           && rq_full_groups(k->lanes, 0, k->ngroups);
}
/* whether a whole position's lane groups go in pairs (16-bit outputs, the plan's choice), in
   fours (1-byte outputs, the plan's choice; no compensation sums, no sum with dst) or one at a
   time through the widening chunks (f32 outputs; 16-bit ones from scaled 1-byte sources) */
static inline int rq_pairs_fit(const rq_block_t* k) {
    return k->groups == 2 && k->ngroups % 2 == 0 && rq_whole(k);
}
static inline int rq_quads_fit(const rq_block_t* k, const rq_math_t* m) {
    return k->groups == 4 && k->ngroups % 4 == 0 && !k->acc && !m->has_sum && rq_whole(k);
}
static inline int rq_singles_fit(const rq_block_t* k) { return !k->acc && rq_whole(k); }
/* A position whose last group overlaps the one before (see rq_block_t), where the group
   bodies take it: the whole groups in one call of `fn`, the last group in another */
static inline void rq_block_split(rq_block_fn fn, const void* src, void* dst, const rq_block_t* k,
                                  const rq_math_t* m, int64_t dsize) {
    const int64_t g = k->ngroups - 1;
    rq_block_t head = *k, tail = *k;
    head.ngroups = g;
    head.last = 16 * (g - 1);
    tail.ngroups = tail.groups = 1;
    tail.last = 0;
    tail.soff += 16 * g;
    tail.lanes += g;
    tail.ssc += 16 * g;
    tail.dinv += 16 * g;
    tail.acc = k->acc ? k->acc + 16 * g : (int32_t*)0;
    fn(src, dst, &head, m);
    fn(src, (char*)dst + k->last * dsize, &tail, m);
}
#define RQ_SINGLES(SN, DN, DSIZE, MODE)                                                         \
    for (int64_t g = 0; g < ngroups; g++, soff += 16, ssc += 16, dinv += 16,                   \
                                     dst += 16 * DSIZE) {                                       \
        const __m512 vs = _mm512_loadu_ps(ssc), vd = _mm512_loadu_ps(dinv);                     \
        __m512i acc_ = _mm512_setzero_si512();                                                  \
        for (int64_t b0 = 0; b0 < nbv; b0 += 16) {                                              \
            char* d0_ = dst + b0 * dB * DSIZE;                                                  \
            if (RQ_W16_##SN)                                                                    \
                rq_w16f32_##SN##_##DN(src, soff, b0, d0_, dB * DSIZE, nt, m);                   \
            else                                                                                \
                rq_b8cols_##SN##_##DN(src, soff, b0, d0_, dB * DSIZE, nt, vs, vd, m, &acc_,     \
                                      (MODE));                                                  \
        }                                                                                       \
    }
/* the same chunks, the columns outermost: each dst row is written whole, in order */
#define RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, MODE)                                              \
    for (int64_t b0 = 0; b0 < nbv; b0 += 16)                                                    \
        for (int64_t g = 0; g < ngroups; g++) {                                                 \
            const __m512 vs = _mm512_loadu_ps(ssc + 16 * g), vd = _mm512_loadu_ps(dinv + 16 * g); \
            __m512i acc_ = _mm512_setzero_si512();                                              \
            char* d0_ = dst + (16 * g + b0 * dB) * DSIZE;                                       \
            if (RQ_W16_##SN)                                                                    \
                rq_w16f32_##SN##_##DN(src, soff + 16 * g, b0, d0_, dB * DSIZE, nt, m);          \
            else                                                                                \
                rq_b8cols_##SN##_##DN(src, soff + 16 * g, b0, d0_, dB * DSIZE, nt, vs, vd, m,   \
                                      &acc_, (MODE));                                           \
        }
#define RQ_QUADS(SN, DN, MODE)                                                                  \
    for (int64_t q = 0; q < nquads; q++, soff += 64, ssc += 64, dinv += 64, dst += 64)         \
        rq_tile4_##SN##_##DN(src, soff, dst, dB, nbv, ssc, dinv, m, nt, (MODE),                 \
                             q == nquads - 1 ? t4 : 48, (MODE) != RQ_ANY);
/* all lane groups of one outer position (see rq_block_t), the body compiled for MODE; 1-byte
   outputs four groups at a time and 16-bit ones two, where the plan asks */
#define RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, MODE)                                          \
    for (int64_t g = 0; g < k->ngroups; g++) {                                                  \
        int64_t b0 = 0;                                                                         \
        if (RQ_B8_##ST && k->groups == 4 && g + 4 <= k->ngroups && k->nbv >= 16 && !k->acc      \
                && !((MODE) == RQ_ANY && m->has_sum) && rq_full_groups(k->lanes, g, 4)) {       \
            b0 = rq_tile4_##SN##_##DN((const char*)src, k->soff + 16 * g,                       \
                                      (char*)dst + 16 * g, k->dB, k->nbv, k->ssc + 16 * g,      \
                                      k->dinv + 16 * g, m, (int)k->nt, MODE, 48, 0);            \
            for (int64_t e = g + 3; g < e; g++)                                                 \
                rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,            \
                                    (char*)dst + 16 * g + b0 * k->dB, k->dB, k->nbv - b0,       \
                                    k->nbw - b0, 0xffff, k->ssc + 16 * g, k->dinv + 16 * g, m,  \
                                    (int32_t*)0, (int)k->nt, MODE);                             \
        }                                                                                       \
        if (RQ_W16_##ST && (MODE) == RQ_PURE && k->groups == 2 && g + 2 <= k->ngroups           \
                && k->nbv >= 16 && rq_full_groups(k->lanes, g, 2)) {                            \
            b0 = rq_tile2_##SN##_##DN((const char*)src, k->soff + 16 * g,                       \
                                      (char*)dst + 32 * g, k->dB, k->nbv, (int)k->nt, m);       \
            rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,                \
                                (char*)dst + (16 * g + b0 * k->dB) * DSIZE, k->dB, k->nbv - b0, \
                                k->nbw - b0, 0xffff, k->ssc + 16 * g, k->dinv + 16 * g, m,      \
                                (int32_t*)0, (int)k->nt, MODE);                                 \
            g++;                                                                                \
        }                                                                                       \
        rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,                    \
                            (char*)dst + (16 * g + b0 * k->dB) * DSIZE, k->dB, k->nbv - b0,     \
                            k->nbw - b0, k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m,     \
                            k->acc ? k->acc + 16 * g : (int32_t*)0, (int)k->nt, MODE);          \
    }
/* one register of 16-bit outputs from rows pa and pb (RQ_PACK2). An x32 source is f32 here:
   the library refuses s32 to f16 or bf16, as oneDNN does, and the dispatch tables name no
   body for those pairs (x86.h). */
#define RQ_PACK2_LD(SN, ST, pa, pb)                                                             \
    RQ_PACK2_##ST(rq_ldr_##SN((pa), 0xffff), rq_ldr_##SN((pb), 0xffff))
#define RQ_TILE(SN, SSIZE, DN, DSIZE) RQ_TILE_T(SN, SSIZE, DN, DSIZE, RQ_TGT, DN)
#define RQ_TILE_T(SN, SSIZE, DN, DSIZE, TGT, ST)                                               \
/* The common case of the 16-bit path below: all 16 rows valid, one row stride, dense        \
   output lines (nChw16c). Its own function, so that the loop keeps two row bases and a      \
   stride in registers instead of 16 pointers spilled beside the tile's other state        \
   (docs/int8.md has the measurements). */                                                    \
TGT static inline __attribute__((always_inline)) void                                          \
rq_rows16_put_##SN##_##DN(const char* p0, const char* p8, int64_t rs, char* d, int nt,         \
                          const rq_math_t* m) {                                                \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    (void)m;                                                                                    \
    __m512i w[8];                                                                               \
    _Pragma("GCC unroll 4")                                                                     \
    for (int k = 0; k < 4; k++) {                                                               \
        w[k] = RQ_PACK2_LD(SN, ST, p0 + 2 * k * rs, p0 + (2 * k + 1) * rs);                     \
        w[4 + k] = RQ_PACK2_LD(SN, ST, p8 + 2 * k * rs, p8 + (2 * k + 1) * rs);                 \
    }                                                                                           \
    tr16x16_w16(w);                                                                             \
    rq_put8(d, w, nt);                                                                          \
}                                                                                               \
/* Two chunks per step: each row is then read 128 bytes at a time, two whole lines. */        \
TGT static __attribute__((noinline)) void                                                      \
rq_rows16_##SN##_##DN(const char* p0, int64_t rs, char* d, int64_t nchunks, int nt,            \
                      const rq_math_t* m) {                                                    \
    const char* p8 = p0 + 8 * rs;                                                               \
    int64_t c = 0;                                                                              \
    for (; c + 2 <= nchunks; c += 2, p0 += 32 * SSIZE, p8 += 32 * SSIZE, d += 1024) {           \
        rq_rows16_put_##SN##_##DN(p0, p8, rs, d, nt, m);                                        \
        rq_rows16_put_##SN##_##DN(p0 + 16 * SSIZE, p8 + 16 * SSIZE, rs, d + 512, nt, m);        \
    }                                                                                           \
    if (c < nchunks) rq_rows16_put_##SN##_##DN(p0, p8, rs, d, nt, m);                           \
}                                                                                               \
/* Two lane groups of 16-bit outputs at once, full chunks of 16 columns, no arithmetic: a      \
   column's 2 x 16 words are one 64-byte line of its dst row (the same scheme as rq_tile4).     \
   Returns the columns done. */                                                                 \
TGT static inline __attribute__((always_inline)) int64_t                                        \
rq_tile2_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
                     int nt, const rq_math_t* m) {                                              \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    (void)m;                                                                                    \
    const int64_t dstep = dB * 2;                                                               \
    nt = nt && ((uintptr_t)dst & 63) == 0 && (dstep & 63) == 0;                                 \
    int64_t b0 = 0;                                                                             \
    for (; b0 + 16 <= nbv; b0 += 16) {                                                          \
        __m512i w[2][8];                                                                        \
        _Pragma("GCC unroll 2")                                                                 \
        for (int g = 0; g < 2; g++) {                                                           \
            _Pragma("GCC unroll 8")                                                             \
            for (int k = 0; k < 8; k++)                                                         \
                w[g][k] = RQ_PACK2_LD(SN, ST, src + (soff[16 * g + 2 * k] + b0) * SSIZE,        \
                                      src + (soff[16 * g + 2 * k + 1] + b0) * SSIZE);           \
            tr16x16_w16(w[g]);                                                                  \
        }                                                                                       \
        char* d0 = dst + b0 * dstep;                                                            \
        _Pragma("GCC unroll 8")                                                                 \
        for (int j = 0; j < 8; j++) {                                                           \
            /* w[g][j] holds columns 2j (low half) and 2j+1 (high half) of group g */          \
            const __m512i lo = _mm512_shuffle_i64x2(w[0][j], w[1][j], 0x44);                    \
            const __m512i hi = _mm512_shuffle_i64x2(w[0][j], w[1][j], 0xee);                    \
            if (nt) {                                                                           \
                _mm512_stream_si512((__m512i*)(d0 + 2 * j * dstep), lo);                        \
                _mm512_stream_si512((__m512i*)(d0 + (2 * j + 1) * dstep), hi);                  \
            } else {                                                                            \
                _mm512_storeu_si512(d0 + 2 * j * dstep, lo);                                    \
                _mm512_storeu_si512(d0 + (2 * j + 1) * dstep, hi);                              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    return b0;                                                                                  \
}                                                                                               \
/* Four lane groups of 1-byte outputs at once, full chunks of 16 columns (every lane valid,     \
   no sum, no sums): a column's 4 x 16 lanes are 64 contiguous bytes of its dst row, stored     \
   whole, where single groups would leave each line to four calls. t4: the fourth group's      \
   place in the column, 48, or less where it overlaps the third (see rq_block_t): the first     \
   48 bytes then go under a mask and its 16 at t4. common: the scales are one value each       \
   (rq_block_t), held in a register instead of one broadcast load a row. Returns the columns   \
   done. */                                                                                     \
TGT static inline __attribute__((always_inline)) int64_t                                        \
rq_tile4_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
        const float* ssc, const float* dinv, const rq_math_t* m, int nt, const int MODE,        \
        int64_t t4, const int common) {                                                         \
    RQ_MODE_FLAGS(MODE)                                                                         \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 adj = _mm512_set1_ps(m->adj);                                                  \
    const __m512 vs = _mm512_set1_ps(ssc[0]), vd = _mm512_set1_ps(dinv[0]);                     \
    (void)hm;                                                                                   \
    nt = nt && t4 == 48 && ((uintptr_t)dst & 63) == 0 && (dB & 63) == 0;                       \
    int64_t b0 = 0;                                                                             \
    for (; b0 + 16 <= nbv; b0 += 16) {                                                          \
        RQ_OPAQUE3(soff, ssc, dinv);                                                            \
        __m512i u[4][4];                                                                        \
        _Pragma("GCC unroll 4")                                                                 \
        for (int g = 0; g < 4; g++) {                                                           \
            __m512 r[16];                                                                       \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = rq_ldr_##SN(src + (soff[16 * g + a] + b0) * SSIZE, 0xffff);              \
            RQ_FIX_##SN(r, 16);                                                                 \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = common ? RQ_TILE_MATH(r[a]) : RQ_ROW_MATH(r[a], 16 * g + a);             \
            RQ_TR8U_##ST(r, u[g]);                                                              \
        }                                                                                       \
        _Pragma("GCC unroll 4")                                                                 \
        for (int j = 0; j < 4; j++) {                                                           \
            const __m512i a4[4] = {u[0][j], u[1][j], u[2][j], u[3][j]};                         \
            __m512i v[4];                                                                       \
            rq_tr4x4_lanes(a4, v);                                                              \
            _Pragma("GCC unroll 4")                                                             \
            for (int k = 0; k < 4; k++) {                                                       \
                char* d = dst + (b0 + 4 * k + j) * dB;                                          \
                if (nt) {                                                                       \
                    _mm512_stream_si512((__m512i*)d, v[k]);                                     \
                } else if (t4 == 48) {                                                          \
                    _mm512_storeu_si512(d, v[k]);                                               \
                } else {                                                                        \
                    /* the fourth group overlaps the third: nothing past its last lane */      \
                    _mm512_mask_storeu_epi8(d, 0xffffffffffffull, v[k]);                        \
                    _mm_storeu_si128((__m128i*)(d + t4), _mm512_extracti32x4_epi32(v[k], 3));   \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    return b0;                                                                                  \
}                                                                                               \
/* One chunk of 16 columns of 16 valid lanes, 16-bit sources to f32 (no arithmetic): the        \
   words transposed first, two rows a register (24 permutes where the f32 transpose takes 64    \
   shuffles), then each column widened; column b to d0 + b * dstep */                           \
TGT static inline __attribute__((always_inline)) void                                           \
rq_w16f32_##SN##_##DN(const char* src, const int64_t* soff, int64_t b0, char* d0,               \
                      int64_t dstep, int nt, const rq_math_t* m) {                              \
    RQ_SRC_VARS_##SN                                                                            \
    __m512i w[8];                                                                               \
    _Pragma("GCC unroll 8")                                                                     \
    for (int k = 0; k < 8; k++)                                                                 \
        w[k] = _mm512_inserti64x4(                                                              \
            _mm512_castsi256_si512(_mm256_loadu_si256(                                          \
                (const __m256i*)(src + (soff[2 * k] + b0) * SSIZE))),                           \
            _mm256_loadu_si256((const __m256i*)(src + (soff[2 * k + 1] + b0) * SSIZE)), 1);     \
    tr16x16_w16(w);                                                                             \
    const int st = nt && ((uintptr_t)d0 & 63) == 0 && (dstep & 63) == 0;                        \
    _Pragma("GCC unroll 8")                                                                     \
    for (int j = 0; j < 8; j++) {                                                               \
        const __m512 lo = rq_widen_##SN(_mm512_castsi512_si256(w[j]));                          \
        const __m512 hi = rq_widen_##SN(_mm512_extracti64x4_epi64(w[j], 1));                    \
        if (st) {                                                                               \
            _mm512_stream_ps((float*)(d0 + 2 * j * dstep), lo);                                 \
            _mm512_stream_ps((float*)(d0 + (2 * j + 1) * dstep), hi);                           \
        } else {                                                                                \
            _mm512_storeu_ps((float*)(d0 + 2 * j * dstep), lo);                                 \
            _mm512_storeu_ps((float*)(d0 + (2 * j + 1) * dstep), hi);                           \
        }                                                                                       \
    }                                                                                           \
}                                                                                               \
/* One chunk of 16 columns of 16 valid lanes, 1-byte sources: the byte transpose first, then    \
   each column widened, the arithmetic of MODE (lane scales vs, vd) and stored to d0 + b *      \
   dstep, adding s8 outputs to *pacc */                                                         \
TGT static inline __attribute__((always_inline)) void                                           \
rq_b8cols_##SN##_##DN(const char* src, const int64_t* soff, int64_t b0, char* d0,               \
                      int64_t dstep, int nt, const __m512 vs, const __m512 vd,                  \
                      const rq_math_t* m, __m512i* pacc, const int MODE) {                      \
    RQ_MODE_FLAGS(MODE)                                                                         \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    const __mmask16 kl = 0xffff;                                                                \
    __m512i vacc = *pacc;                                                                       \
    __m256i y[8];                                                                               \
    _Pragma("GCC unroll 8")                                                                     \
    for (int a = 0; a < 8; a++)                                                                 \
        y[a] = _mm256_inserti128_si256(                                                         \
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(src + soff[a] + b0))),      \
            _mm_loadu_si128((const __m128i*)(src + soff[a + 8] + b0)), 1);                      \
    avx2_tr16x16_epi8(y);                                                                       \
    int64_t step = dstep;                                                                       \
    RQ_OPAQUE2(d0, step);                                                                       \
    if (RQ_F32_##ST && nt && !hm && ((uintptr_t)d0 & 63) == 0 && (step & 63) == 0) {            \
        /* f32 columns are whole 64-byte lines: streamed */                                     \
        _Pragma("GCC unroll 8")                                                                 \
        for (int q = 0; q < 8; q++) {                                                           \
            _mm512_stream_ps((float*)(d0 + 2 * q * step), RQ_TILE_MATH(                         \
                RQ_WIDEN_##SN(_mm256_castsi256_si128(y[q]))));                                  \
            _mm512_stream_ps((float*)(d0 + (2 * q + 1) * step), RQ_TILE_MATH(                   \
                RQ_WIDEN_##SN(_mm256_extracti128_si256(y[q], 1))));                             \
        }                                                                                       \
        return;                                                                                 \
    }                                                                                           \
    _Pragma("GCC unroll 8")                                                                     \
    for (int q = 0; q < 8; q++) {                                                               \
        RQ_TILE_OUT(DN, ST, RQ_WIDEN_##SN(_mm256_castsi256_si128(y[q])), d0 + 2 * q * step);    \
        RQ_TILE_OUT(DN, ST, RQ_WIDEN_##SN(_mm256_extracti128_si256(y[q], 1)),                   \
                    d0 + (2 * q + 1) * step);                                                   \
    }                                                                                           \
    *pacc = vacc;                                                                               \
}                                                                                               \
TGT static inline __attribute__((always_inline)) void                                          \
rq_tile_##SN##_##DN(const void* src_, const int64_t* soff, void* dst_,                          \
        int64_t dB, int64_t nbv, int64_t nbw, uint32_t lanes, const float* ssc,                 \
        const float* dinv, const rq_math_t* m, int32_t* acc, int nt, const int MODE) {          \
    const char* src = (const char*)src_;                                                        \
    char* dst = (char*)dst_;                                                                    \
    const __mmask16 kl = (__mmask16)lanes;                                                      \
    const __m512 vs = _mm512_loadu_ps(ssc), vd = _mm512_loadu_ps(dinv);                         \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    const int64_t dstep = dB * DSIZE;                                                           \
    const char* rows[16];                                                                       \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    __m512 r[16];                                                                               \
    for (int a = 0; a < 16; a++) rows[a] = src + soff[a] * SSIZE;                               \
    int64_t b0 = 0;                                                                             \
    if (MODE == RQ_PURE && RQ_W16_##ST && dstep == 32 && lanes == 0xffffu && nbv >= 16) {       \
        const int64_t rs = (soff[1] - soff[0]) * SSIZE;                                         \
        int uni = 1;                                                                            \
        for (int a = 2; a < 16; a++) uni &= rows[a] - rows[0] == a * rs;                        \
        if (uni) {                                                                              \
            b0 = nbv / 16 * 16;                                                                 \
            rq_rows16_##SN##_##DN(rows[0], rs, dst, nbv / 16, nt && ((uintptr_t)dst & 63) == 0, \
                                  m);                                                           \
        }                                                                                       \
    }                                                                                           \
    for (; b0 + 16 <= nbv; b0 += 16) {          /* full chunks: fully unrolled */              \
        if (MODE == RQ_PURE && RQ_W16_##ST) {                                                   \
            /* 16-bit outputs: convert first, then transpose words, two rows per register      \
               (24 permutes where the f32 transpose takes 64 shuffles) */                      \
            __m512i w[8];                                                                       \
            const int64_t o = b0 * SSIZE;                                                       \
            if (lanes == 0xffffu) {                                                             \
                /* no per-lane tests: gcc makes them 32 taken branches per chunk */             \
                _Pragma("GCC unroll 8")                                                         \
                for (int k = 0; k < 8; k++)                                                     \
                    w[k] = RQ_PACK2_LD(SN, ST, rows[2 * k] + o, rows[2 * k + 1] + o);           \
            } else {                                                                            \
                _Pragma("GCC unroll 8")                                                         \
                for (int k = 0; k < 8; k++) {                                                   \
                    __m512 x = _mm512_setzero_ps(), y = _mm512_setzero_ps();                    \
                    if (lanes >> (2 * k) & 1u) x = rq_ldr_##SN(rows[2 * k] + o, 0xffff);         \
                    if (lanes >> (2 * k + 1) & 1u) y = rq_ldr_##SN(rows[2 * k + 1] + o, 0xffff); \
                    w[k] = RQ_PACK2_##ST(x, y);                                                 \
                }                                                                               \
            }                                                                                   \
            tr16x16_w16(w);                                                                     \
            char* d0 = dst + b0 * dstep;                                                        \
            if (dstep == 32) {                                                                  \
                rq_put8(d0, w, nt && ((uintptr_t)d0 & 63) == 0);                                \
            } else {                                                                            \
                _Pragma("GCC unroll 8")                                                         \
                for (int j = 0; j < 8; j++) {                                                   \
                    _mm256_storeu_si256((__m256i*)(d0 + 2 * j * dstep),                         \
                                        _mm512_castsi512_si256(w[j]));                          \
                    _mm256_storeu_si256((__m256i*)(d0 + (2 * j + 1) * dstep),                   \
                                        _mm512_extracti64x4_epi64(w[j], 1));                    \
                }                                                                               \
            }                                                                                   \
            continue;                                                                           \
        }                                                                                       \
        if (MODE == RQ_PURE && RQ_W16_##SN && RQ_F32_##ST && lanes == 0xffffu) {                \
            rq_w16f32_##SN##_##DN(src, soff, b0, dst + b0 * dstep, dstep, nt, m);               \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_B8_##ST && lanes == 0xffffu && !hm && !acc) {                                    \
            /* 1-byte outputs: each source row converted, then packed and transposed as         \
               bytes (rq_tr8_put) instead of by the f32 transpose's 64 shuffles */              \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++) r[a] = rq_ldr_##SN(rows[a] + b0 * SSIZE, 0xffff);       \
            RQ_FIX_##SN(r, 16);                                                                 \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++) r[a] = RQ_ROW_MATH(r[a], a);                           \
            char* d8 = dst + b0 * dstep;                                                        \
            int64_t step8 = dstep;                                                              \
            RQ_OPAQUE2(d8, step8);                                                              \
            RQ_TR8_##ST(r, d8, step8, nt);                                                      \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_B8_##SN && lanes == 0xffffu) {                                                   \
            rq_b8cols_##SN##_##DN(src, soff, b0, dst + b0 * dstep, dstep, nt, vs, vd, m, &vacc, \
                                  MODE);                                                        \
            continue;                                                                           \
        }                                                                                       \
        if (lanes == 0xffffu) {                                                                 \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++) r[a] = rq_ldr_##SN(rows[a] + b0 * SSIZE, 0xffff);       \
        } else {                                                                                \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = (lanes >> a & 1u) ? rq_ldr_##SN(rows[a] + b0 * SSIZE, 0xffff)             \
                                         : _mm512_setzero_ps();                                 \
        }                                                                                       \
        RQ_FIX_##SN(r, 16);                                                                     \
        tr16x16(r);                                                                             \
        char* d0 = dst + b0 * dstep;                                                            \
        if (RQ_W16_##ST && nt && dstep == 32 && ((uintptr_t)d0 & 63) == 0 && !hm) {             \
            /* 16-bit outputs b, b+1 are one 64-byte line: stream it */                        \
            _Pragma("GCC unroll 8")                                                             \
            for (int b = 0; b < 16; b += 2) {                                                   \
                __m256i lo = RQ_CV_##ST(RQ_TILE_MATH(r[b]), kl);                                \
                __m256i hi = RQ_CV_##ST(RQ_TILE_MATH(r[b + 1]), kl);                            \
                _mm512_stream_si512((__m512i*)(d0 + b * 32),                                    \
                                    _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));     \
            }                                                                                   \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_F32_##ST && nt && !hm && ((uintptr_t)d0 & 63) == 0 && (dstep & 63) == 0) {       \
            _Pragma("GCC unroll 16")                                                            \
            for (int b = 0; b < 16; b++)                                                        \
                _mm512_stream_ps((float*)(d0 + b * dstep),                                      \
                                 _mm512_maskz_mov_ps(kl, RQ_TILE_MATH(r[b])));                  \
            continue;                                                                           \
        }                                                                                       \
        _Pragma("GCC unroll 16")                                                                \
        for (int b = 0; b < 16; b++) RQ_TILE_OUT(DN, ST, r[b], d0 + b * dstep);                 \
    }                                                                                           \
    if (b0 < nbv) {                             /* the last, partial chunk */                  \
        int nb = (int)(nbv - b0);                                                               \
        __mmask16 kb = (__mmask16)((1u << nb) - 1u);                                            \
        for (int a = 0; a < 16; a++)                                                            \
            r[a] = (lanes >> a & 1u) ? rq_ldr_##SN(rows[a] + b0 * SSIZE, kb)                     \
                                     : _mm512_setzero_ps();                                     \
        RQ_FIX_##SN(r, 16);                                                                     \
        tr16x16(r);                                                                             \
        for (int b = 0; b < nb; b++) RQ_TILE_OUT(DN, ST, r[b], dst + (b0 + b) * dstep);         \
    }                                                                                           \
    for (int64_t b = nbv < 0 ? 0 : nbv; b < nbw; b++)                                           \
        memset(dst + b * dstep, 0, 16 * DSIZE);                                                 \
    if (acc) {                                                                                  \
        __m512i old = _mm512_loadu_si512(acc);                                                  \
        _mm512_storeu_si512(acc, _mm512_add_epi32(old, vacc));                                  \
    }                                                                                           \
}                                                                                               \
/* Every lane group of a position in pairs (16-bit outputs, no arithmetic, see rq_pairs_fit):   \
   its own function, so that the loop keeps its few pointers in registers where the tile        \
   body's state spills them (docs/kernels.md). */                                               \
TGT static __attribute__((noinline)) void                                                       \
rq_pairs_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,               \
                     int64_t npairs, int64_t nbv, int nt, const rq_math_t* m) {                 \
    for (int64_t g = 0; g < npairs; g++, soff += 32, dst += 64)                                 \
        rq_tile2_##SN##_##DN(src, soff, dst, dB, nbv, nt, m);                                   \
}                                                                                               \
/* A position's lane groups one at a time, each chunk through rq_w16f32 / rq_b8cols (16-bit     \
   sources to f32; 1-byte ones to f32, and scaled to 16-bit outputs, which go in pairs when     \
   unscaled: see rq_singles_fit and docs/kernels.md), and four at a time through rq_tile4       \
   (1-byte outputs, see rq_quads_fit): their own functions, for the reason of rq_pairs; one     \
   loop per arithmetic mode, the tiles' mode constants */                                       \
TGT static __attribute__((noinline)) void                                                       \
rq_singles_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,             \
                       int64_t ngroups, int64_t nbv, const float* ssc, const float* dinv,       \
                       const rq_math_t* m, int nt, int mode, int cols_first) {                  \
    /* rq_block's condition: 1-byte sources come unscaled only to f32 (to 16-bit outputs they  \
       go in pairs), so no such body is compiled */                                             \
    if (cols_first) {                                                                           \
        if (!RQ_B8_##SN || (RQ_F32_##DN && mode == RQ_PURE))                                    \
            RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_PURE)                                       \
        else if (mode == RQ_SSCALE) RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_SSCALE)             \
        else RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_SSCALE_ZP)                                 \
    }                                                                                           \
    else if (!RQ_B8_##SN || (RQ_F32_##DN && mode == RQ_PURE)) RQ_SINGLES(SN, DN, DSIZE, RQ_PURE) \
    else if (mode == RQ_SSCALE) RQ_SINGLES(SN, DN, DSIZE, RQ_SSCALE)                            \
    else RQ_SINGLES(SN, DN, DSIZE, RQ_SSCALE_ZP)                                                \
}                                                                                               \
TGT static __attribute__((noinline)) void                                                       \
rq_quads_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,               \
                     int64_t nquads, int64_t nbv, const float* ssc, const float* dinv,          \
                     const rq_math_t* m, int nt, int mode, int64_t t4) {                        \
    if (mode == RQ_PURE) RQ_QUADS(SN, DN, RQ_PURE)                                              \
    else if (mode == RQ_DSCALE) RQ_QUADS(SN, DN, RQ_DSCALE)                                     \
    else if (mode == RQ_DSCALE_ZP) RQ_QUADS(SN, DN, RQ_DSCALE_ZP)                               \
    else if (RQ_B8_##SN && mode == RQ_SSCALE) RQ_QUADS(SN, DN, RQ_SSCALE)                       \
    else if (RQ_B8_##SN && mode == RQ_SSCALE_ZP) RQ_QUADS(SN, DN, RQ_SSCALE_ZP)                 \
    else RQ_QUADS(SN, DN, RQ_ANY)                                                               \
}                                                                                               \
/* bodies with a scale only where a side is 1-byte (the int8 activations): the others take      \
   RQ_ANY, which keeps the code size down */                                                    \
TGT RQ_ENTRY void rq_block_##SN##_##DN(const void* src, void* dst,                              \
                                                    const rq_block_t* k, const rq_math_t* m) {  \
    int mode = rq_mode(m, 0, 0);                                                                \
    if (((mode == RQ_SSCALE || mode == RQ_SSCALE_ZP) && !RQ_B8_##SN)                            \
            || ((mode == RQ_DSCALE || mode == RQ_DSCALE_ZP) && !RQ_B8_##ST))                    \
        mode = RQ_ANY;                                                                          \
    const char* s = (const char*)src;                                                           \
    char* d = (char*)dst;                                                                       \
    const int quads = RQ_B8_##ST && rq_quads_fit(k, m);                                         \
    if (k->last != 16 * (k->ngroups - 1) && !quads) {                                           \
        rq_block_split(rq_block_##SN##_##DN, src, dst, k, m, DSIZE);                            \
        return;                                                                                 \
    }                                                                                           \
    if (quads) {                                                                                \
        /* the last quad's fourth group in its column: 48, or where it overlaps the third; the  \
           fours' bodies with a scale hold it in a register: a scale per lane takes any */      \
        if (!k->common && mode != RQ_PURE) mode = RQ_ANY;                                       \
        rq_quads_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups / 4, k->nbv, k->ssc, k->dinv, m,  \
                             (int)k->nt, mode, k->last - 16 * (k->ngroups - 4));                \
    } else if (rq_singles_fit(k)                                                                \
               && (RQ_W16_##SN ? RQ_F32_##ST && mode == RQ_PURE                                 \
                               : RQ_B8_##SN && (mode == RQ_SSCALE || mode == RQ_SSCALE_ZP       \
                                                || (RQ_F32_##ST && mode == RQ_PURE))            \
                                 && (RQ_F32_##ST || RQ_W16_##ST))) {                            \
        rq_singles_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups, k->nbv, k->ssc, k->dinv, m,    \
                               (int)k->nt, mode, (int)k->cols_first);                           \
    } else if (RQ_W16_##ST && mode == RQ_PURE && rq_pairs_fit(k)) {                             \
        rq_pairs_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups / 2, k->nbv, (int)k->nt, m);      \
    } else {                                                                                    \
        switch (mode) {                                                                         \
        case RQ_PURE: RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_PURE); break;                 \
        case RQ_SSCALE:                                                                         \
            if (RQ_B8_##SN) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_SSCALE); break;         \
        case RQ_SSCALE_ZP:                                                                      \
            if (RQ_B8_##SN) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_SSCALE_ZP); break;      \
        case RQ_DSCALE:                                                                         \
            if (RQ_B8_##ST) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_DSCALE); break;         \
        case RQ_DSCALE_ZP:                                                                      \
            if (RQ_B8_##ST) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_DSCALE_ZP); break;      \
        default: RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_ANY);                              \
        }                                                                                       \
    }                                                                                           \
    if (k->nt) _mm_sfence();                                                                    \
}

#define RQ_TILES_FOR(SN, SSIZE)                                                                \
    RQ_TILE(SN, SSIZE, f32, 4) RQ_TILE(SN, SSIZE, f64, 8) RQ_TILE(SN, SSIZE, h16, 2)           \
    RQ_TILE(SN, SSIZE, b8, 1) RQ_TILE(SN, SSIZE, s32, 4)

#define RQ_TILE_BF16HW(SN, SSIZE) RQ_TILE_T(SN, SSIZE, bf16hw, 2, RQ_TGT_BF16, bf16hw)

#endif
#endif
