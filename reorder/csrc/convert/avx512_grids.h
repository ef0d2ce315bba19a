/* AVX-512 conversion grids: a block's short runs in one call, see rq_grid_t (RQ_GRIDS_KERNEL). */
#ifndef REORDER_CONVERT_AVX512_GRIDS_H
#define REORDER_CONVERT_AVX512_GRIDS_H
#include "convert/x86.h"
#include "convert/avx512_loads_stores.h"

#if RQ_X86
/* ---- AVX-512 grids: a block's short runs in one call (see rq_grid_t) -------------------- */
/* lanes J.. of a run at SP / DP, scales from SSC / DSC: KV the lanes to convert, NWJ the
   lanes to write (a part of a vector goes through a buffer, so nothing past the run is
   touched) */
#define RQ_GRIDS_VEC(SN, SSIZE, DN, DSIZE, ST, SP, DP, SSC, DSC, J, KV, NWJ)                       \
    do {                                                                                        \
        const int64_t j6_ = (J), nwj_ = (NWJ);                                                  \
        const __mmask16 kl = (KV);                                                              \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, (SSC) + j6_);                              \
        if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, (DSC) + j6_);                              \
        const __m512 x6_ = rq_ld_##SN((SP) + j6_ * SSIZE, kl);                                  \
        if (nwj_ >= 16) {                                                                       \
            RQ_TILE_OUT(DN, ST, x6_, (DP) + j6_ * DSIZE);                                       \
        } else {                                                                                \
            char db6_[16 * DSIZE];                                                              \
            memset(db6_, 0, sizeof(db6_));                                                      \
            if (hm) memcpy(db6_, (DP) + j6_ * DSIZE, (size_t)nwj_ * DSIZE);                     \
            RQ_TILE_OUT(DN, ST, x6_, db6_);                                                     \
            memcpy((DP) + j6_ * DSIZE, db6_, (size_t)nwj_ * DSIZE);                             \
        }                                                                                       \
    } while (0)
#define RQ_GRIDS_MASK(n) ((n) >= 16 ? (__mmask16)0xffff : (n) <= 0 ? (__mmask16)0                  \
                     : (__mmask16)((1u << (n)) - 1u))
/* the rows r0.. of column c up to the last, each one vector of 16 lanes, KL the lanes of data
   (the rest written as zeros): 4 rows at a time; 1-byte rows that follow each other in dst
   (nChw16c) packed four to a 64-byte store, as the rows do */
#define RQ_GRIDS_ROWS16(SN, SSIZE, DN, DSIZE, ST, SP, DP, KL)                                      \
    do {                                                                                        \
        const __mmask16 kl = (KL);                                                              \
        if (RQ_B8_##ST && !hm && rdb == 16) {                                                   \
            for (; r0 + 4 < g->rows; r0 += 4) {                                                 \
                __m512 v4[4];                                                                   \
                _Pragma("GCC unroll 4")                                                         \
                for (int u = 0; u < 4; u++) {                                                   \
                    __m512 vs = vs1, vd = vd1;                                                  \
                    if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + (r0 + u) * g->rks);      \
                    if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + (r0 + u) * g->rks);     \
                    v4[u] = _mm512_maskz_mov_ps(kl, RQ_TILE_MATH(                               \
                        rq_ld_##SN((SP) + (r0 + u) * rsb, kl)));                                \
                }                                                                               \
                _mm512_storeu_si512((DP) + r0 * rdb, RQ_LINE_##ST(v4));                         \
            }                                                                                   \
        }                                                                                       \
        _Pragma("GCC unroll 4")                                                                 \
        for (; r0 < g->rows - 1; r0++) {                                                       \
            __m512 vs = vs1, vd = vd1;                                                          \
            if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + r0 * g->rks);                    \
            if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + r0 * g->rks);                   \
            RQ_TILE_OUT(DN, ST, rq_ld_##SN((SP) + r0 * rsb, kl), (DP) + r0 * rdb);              \
        }                                                                                       \
    } while (0)
/* column c, every row, with cached stores: rows of 16 lanes (a padded block's under the mask
   of its data lanes: a constant one, so the rows keep the unrolled loop) first, and a last
   row of 16 whose data lanes may end earlier */
#define RQ_GRIDS_COL(SN, SSIZE, DN, DSIZE, ST, C)                                                  \
    int64_t r0 = 0;                                                                             \
    if (g->L == 16 && g->nw == 16) {                                                            \
        const char* sp = s + (C) * csb;                                                         \
        char* dp = d + (C) * cdb;                                                               \
        if (g->nv == 16)                                                                        \
            RQ_GRIDS_ROWS16(SN, SSIZE, DN, DSIZE, ST, sp, dp, 0xffff);                             \
        else                                                                                    \
            RQ_GRIDS_ROWS16(SN, SSIZE, DN, DSIZE, ST, sp, dp, RQ_GRIDS_MASK(g->nv));               \
        if (g->nwl == 16) {                                                                     \
            const __mmask16 kl = RQ_GRIDS_MASK(g->nvl);                                            \
            __m512 vs = vs1, vd = vd1;                                                          \
            if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + r0 * g->rks);                    \
            if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + r0 * g->rks);                   \
            RQ_TILE_OUT(DN, ST, rq_ld_##SN(sp + r0 * rsb, kl), dp + r0 * rdb);                  \
            r0++;                                                                               \
        }                                                                                       \
    }                                                                                           \
    for (int64_t r = r0; r < g->rows; r++) {                                                    \
        const char* sp = s + (C) * csb + r * rsb;                                               \
        char* dp = d + (C) * cdb + r * rdb;                                                     \
        const int64_t nv_ = r == g->rows - 1 ? g->nvl : g->nv;                                  \
        const int64_t nw_ = r == g->rows - 1 ? g->nwl : g->nw;                                  \
        for (int64_t j = 0; j < nw_; j += 16)                                                   \
            RQ_GRIDS_VEC(SN, SSIZE, DN, DSIZE, ST, sp, dp, ssc + r * g->rks, dinv + r * g->rks, j, \
                    RQ_GRIDS_MASK(nv_ - j), nw_ - j);                                              \
    }
#define RQ_GRIDS_KERNEL(SN, SSIZE, DN, DSIZE, TGT, ST)                                             \
TGT static inline __attribute__((always_inline)) void                                          \
rq_grids_body_##SN##_##ST(const char* s, char* d, const rq_grid_t* g, const rq_math_t* m,       \
                          const int MODE) {                                                     \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    const float* ssc = g->ssc;                                                                  \
    const float* dinv = g->dinv;                                                                \
    const int64_t sk = rq_any ? g->sk : 0, dk = rq_any ? g->dk : 0;                             \
    /* per-lane scales are read under the lanes' mask only (a run of padding has none) */     \
    const __m512 vs1 = _mm512_set1_ps(hs && !sk ? ssc[0] : 1.0f);                              \
    const __m512 vd1 = _mm512_set1_ps(hd && !dk ? dinv[0] : 1.0f);                             \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    const int64_t csb = g->css * SSIZE, cdb = g->cds * DSIZE;                                   \
    const int64_t rsb = g->rss * SSIZE, rdb = g->rds * DSIZE;                                   \
    const int64_t NV = 64 / DSIZE / 16;                                                         \
    int64_t c = 0;                                                                              \
    /* runs of 16 lanes that continue each other in dst across the columns: NV columns make   \
       a 64-byte line of each row, stored past the caches (the columns go through in groups  \
       of NV, their rows inside, so the source is read in order) */                         \
    if (RQ_NTL_##ST && m->nt && !hm && g->L == 16 && g->cds == 16 && g->nw == 16               \
            && g->nwl == 16 && g->cols >= 2 * NV && (rdb & 63) == 0                             \
            && ((uintptr_t)d % (16 * DSIZE)) == 0) {                                            \
        for (; c < g->cols && ((uintptr_t)(d + c * cdb) & 63); c++) {                           \
            RQ_GRIDS_COL(SN, SSIZE, DN, DSIZE, ST, c)                                              \
        }                                                                                       \
        for (; c + NV <= g->cols; c += NV) {                                                    \
            for (int64_t r = 0; r < g->rows; r++) {                                             \
                const __mmask16 kv = RQ_GRIDS_MASK(r == g->rows - 1 ? g->nvl : g->nv);             \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_maskz_loadu_ps(kv, ssc + r * g->rks);                 \
                if (hd && dk) vd = _mm512_maskz_loadu_ps(kv, dinv + r * g->rks);                \
                __m512 v4[4];                                                                   \
                _Pragma("GCC unroll 4")                                                         \
                for (int u = 0; u < 4; u++) {                                                   \
                    if (u >= NV) break;                                                         \
                    v4[u] = _mm512_maskz_mov_ps(kv, RQ_TILE_MATH(                               \
                        rq_ld_##SN(s + (c + u) * csb + r * rsb, kv)));                          \
                }                                                                               \
                _mm512_stream_si512((__m512i*)(d + c * cdb + r * rdb), RQ_LINE_##ST(v4));       \
            }                                                                                   \
        }                                                                                       \
        _mm_sfence();                                                                           \
    }                                                                                           \
    for (; c < g->cols; c++) {                                                                  \
        RQ_GRIDS_COL(SN, SSIZE, DN, DSIZE, ST, c)                                                  \
    }                                                                                           \
    (void)vacc;                                                                                 \
}                                                                                               \
TGT RQ_ENTRY void rq_grids_##SN##_##ST(const void* s, void* d, const rq_grid_t* g,              \
                                     const rq_math_t* m) {                                      \
    int mode = rq_mode(m, g->sk, g->dk);                                                        \
    /* bodies with one scale only where a side is 1-byte, and with a scale and a zero           \
       point where that side is (the int8 activations); the other pairs take RQ_ANY */          \
    if (mode != RQ_PURE && !(RQ_B8_##SN || RQ_B8_##ST)) mode = RQ_ANY;                          \
    if ((mode == RQ_SSCALE_ZP && !RQ_B8_##SN) || (mode == RQ_DSCALE_ZP && !RQ_B8_##ST))         \
        mode = RQ_ANY;                                                                          \
    switch (mode) {                                                                             \
    case RQ_PURE: rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_PURE); break;    \
    case RQ_SSCALE:                                                                             \
        if (RQ_B8_##SN || RQ_B8_##ST)                                                           \
            rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_SSCALE);               \
        break;                                                                                  \
    case RQ_SSCALE_ZP:                                                                          \
        if (RQ_B8_##SN)                                                                         \
            rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_SSCALE_ZP);            \
        break;                                                                                  \
    case RQ_DSCALE:                                                                             \
        if (RQ_B8_##SN || RQ_B8_##ST)                                                           \
            rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_DSCALE);               \
        break;                                                                                  \
    case RQ_DSCALE_ZP:                                                                          \
        if (RQ_B8_##ST)                                                                         \
            rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_DSCALE_ZP);            \
        break;                                                                                  \
    default: rq_grids_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_ANY);                 \
    }                                                                                           \
}
#endif
#endif
