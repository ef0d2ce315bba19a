/* AVX-512 conversion rows: the strided walk's contiguous runs, 16 elements a vector, with
 * the tiles' loads and stores (RQ_ROWS_KERNEL). */
#ifndef REORDER_CONVERT_AVX512_ROWS_H
#define REORDER_CONVERT_AVX512_ROWS_H
#include "convert/x86.h"
#include "convert/avx512_loads_stores.h"

#if RQ_X86
/* ---- AVX-512 rows: 16 elements per vector, the loads and stores of the tiles ------------- */
/* the r < 16 elements from j through buffers */
#define RQ_ROWS_PART(SN, SSIZE, DN, DSIZE, ST, J, R)                                               \
    do {                                                                                        \
        const int64_t j_ = (J), r_ = (R);                                                       \
        char sb[16 * SSIZE], db[16 * DSIZE];                                                    \
        float fs[16], fd[16];                                                                   \
        memset(sb, 0, sizeof(sb)); memset(db, 0, sizeof(db));                                   \
        memset(fs, 0, sizeof(fs)); memset(fd, 0, sizeof(fd));                                   \
        memcpy(sb, s + j_ * SSIZE, (size_t)r_ * SSIZE);                                         \
        if (hm) memcpy(db, d + j_ * DSIZE, (size_t)r_ * DSIZE);                                 \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) { memcpy(fs, ssc + j_, (size_t)r_ * 4); vs = _mm512_loadu_ps(fs); }       \
        if (hd && dk) { memcpy(fd, dinv + j_, (size_t)r_ * 4); vd = _mm512_loadu_ps(fd); }       \
        RQ_TILE_OUT(DN, ST, rq_ld_##SN(sb, 0xffff), db);                                        \
        memcpy(d + j_ * DSIZE, db, (size_t)r_ * DSIZE);                                         \
    } while (0)
#define RQ_ROWS_KERNEL(SN, SSIZE, DN, DSIZE, TGT, ST)                                              \
TGT static inline __attribute__((always_inline)) void                                          \
rq_rows_body_##SN##_##ST(const char* s, char* d, int64_t n, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int MODE) {                    \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    RQ_SRC_VARS_##SN                                                                            \
    RQ_DST_VARS_##ST                                                                            \
    if (!rq_any) sk = dk = 0;                                                                   \
    const __mmask16 kl = 0xffff;                                                                \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    const __m512 vs1 = _mm512_set1_ps(hs ? ssc[0] : 1.0f), vd1 = _mm512_set1_ps(hd ? dinv[0] : 1.0f); \
    int64_t j = 0;                                                                              \
    /* streaming (large outputs): up to the first 64-byte boundary through buffers, then      \
       whole lines of 64 / DSIZE elements into aligned streaming stores (no sum: dst is     \
       never read) */                                                                     \
    if (RQ_NTL_##ST && m->nt && !hm && n >= 128 && ((uintptr_t)d % DSIZE) == 0) {              \
        while (j < n && ((uintptr_t)(d + j * DSIZE) & 63)) {                                    \
            int64_t r = (int64_t)((64 - ((uintptr_t)(d + j * DSIZE) & 63)) / DSIZE);            \
            if (r > 16) r = 16;                                                                 \
            if (r > n - j) r = n - j;                                                           \
            RQ_ROWS_PART(SN, SSIZE, DN, DSIZE, ST, j, r);                                          \
            j += r;                                                                             \
        }                                                                                       \
        for (; j + 64 / DSIZE <= n; j += 64 / DSIZE) {                                          \
            __m512 v4[4];                                                                       \
            _Pragma("GCC unroll 4")                                                             \
            for (int u = 0; u < 4; u++) {                                                       \
                if (u >= 64 / DSIZE / 16) break;                                                \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_loadu_ps(ssc + j + 16 * u);                           \
                if (hd && dk) vd = _mm512_loadu_ps(dinv + j + 16 * u);                          \
                v4[u] = RQ_TILE_MATH(rq_ld_##SN(s + (j + 16 * u) * SSIZE, 0xffff));                \
            }                                                                                   \
            _mm512_stream_si512((__m512i*)(d + j * DSIZE), RQ_LINE_##ST(v4));                   \
        }                                                                                       \
        _mm_sfence();                                                                           \
    }                                                                                           \
    /* cached 1-byte outputs: four vectors packed into one 64-byte store, where one store     \
       of 16 bytes each (vpmovdb) measured slower */                                         \
    if (RQ_B8_##ST && !hm) {                                                                    \
        for (; j + 64 <= n; j += 64) {                                                          \
            __m512 v4[4];                                                                       \
            _Pragma("GCC unroll 4")                                                             \
            for (int u = 0; u < 4; u++) {                                                       \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_loadu_ps(ssc + j + 16 * u);                           \
                if (hd && dk) vd = _mm512_loadu_ps(dinv + j + 16 * u);                          \
                v4[u] = RQ_TILE_MATH(rq_ld_##SN(s + (j + 16 * u) * SSIZE, 0xffff));             \
            }                                                                                   \
            _mm512_storeu_si512(d + j * DSIZE, RQ_LINE_##ST(v4));                               \
        }                                                                                       \
    }                                                                                           \
    for (; j + 16 <= n; j += 16) {                                                              \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) vs = _mm512_loadu_ps(ssc + j);                                            \
        if (hd && dk) vd = _mm512_loadu_ps(dinv + j);                                           \
        RQ_TILE_OUT(DN, ST, rq_ld_##SN(s + j * SSIZE, 0xffff), d + j * DSIZE);                  \
    }                                                                                           \
    if (j < n) RQ_ROWS_PART(SN, SSIZE, DN, DSIZE, ST, j, n - j);                                   \
    (void)vacc;                                                                                 \
}                                                                                               \
TGT RQ_ENTRY void rq_rows_##SN##_##ST(const void* s, void* d, int64_t n, const float* ssc,      \
        int64_t sk, const float* dinv, int64_t dk, const rq_math_t* m) {                        \
    const char* s_ = (const char*)s;                                                            \
    char* d_ = (char*)d;                                                                        \
    int mode = rq_mode(m, sk, dk);                                                              \
    /* bodies with one scale only where a side is 1-byte, and with a scale and a zero           \
       point where that side is (the int8 activations); the other pairs take RQ_ANY */          \
    if (mode != RQ_PURE && !(RQ_B8_##SN || RQ_B8_##ST)) mode = RQ_ANY;                          \
    if ((mode == RQ_SSCALE_ZP && !RQ_B8_##SN) || (mode == RQ_DSCALE_ZP && !RQ_B8_##ST))         \
        mode = RQ_ANY;                                                                          \
    switch (mode) {                                                                             \
    case RQ_PURE: rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_PURE); break;    \
    case RQ_SSCALE:                                                                             \
        if (RQ_B8_##SN || RQ_B8_##ST)                                                           \
            rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_SSCALE);               \
        break;                                                                                  \
    case RQ_SSCALE_ZP:                                                                          \
        if (RQ_B8_##SN) rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_SSCALE_ZP);\
        break;                                                                                  \
    case RQ_DSCALE:                                                                             \
        if (RQ_B8_##SN || RQ_B8_##ST)                                                           \
            rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_DSCALE);               \
        break;                                                                                  \
    case RQ_DSCALE_ZP:                                                                          \
        if (RQ_B8_##ST) rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_DSCALE_ZP);\
        break;                                                                                  \
    default: rq_rows_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_ANY);                 \
    }                                                                                           \
}
#endif
#endif
