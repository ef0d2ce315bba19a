/* The AVX2 (+F16C) conversion tile and row, 8 elements wide, for CPUs without AVX-512: one
 * body each for every pair of element types, the pair taken at run time (rq_math_t.scode and
 * dcode) by a switch per step, so the loads of a source type and the stores of a destination
 * type meet in registers (convert/avx2.h has both halves). */
#include "convert/avx2.h"
#include "convert/entry_points.h"
#if RQ_X86

/* The tile: 16 rows x 8 columns per step, two 8x8 transposes, then per column the 16 lanes as
   two vectors, converted and stored as 16 contiguous elements. Invalid lanes read a zero row
   and are masked to 0 after the arithmetic; the last columns go through a zeroed stack copy,
   so every load is a full vector. */
#define RQ_AVX2_CHUNK_LOAD(SN, SSIZE)                                                           \
    _Pragma("GCC unroll 8")                                                                     \
    for (int a = 0; a < 8; a++) { lo[a] = rq_avx2_ld_##SN(rp[a]); hi[a] = rq_avx2_ld_##SN(rp[8 + a]); }
#define RQ_AVX2_CHUNK_STORE(DN, DSIZE)                                                          \
    _Pragma("GCC unroll 8")                                                                     \
    for (int b = 0; b < 8; b++) {                                                               \
        if (b >= nb) break;                                                                     \
        char* q = d + b * dstep;                                                                \
        __m256 x = RQ_AVX2_MATH(lo[b], vs0, vd0, DN, q);                                        \
        __m256 y = RQ_AVX2_MATH(hi[b], vs1, vd1, DN, q + 8 * DSIZE);                            \
        if (masked) { x = _mm256_and_ps(x, mk0); y = _mm256_and_ps(y, mk1); }                   \
        if (nt) rq_avx2_nt16_##DN(q, x, y, acc); else rq_avx2_st16_##DN(q, x, y, acc);          \
    }
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void
rq_avx2_chunk(const char* const rp[16], char* d, int64_t dstep, int nb, __m256 vs0, __m256 vs1,
              __m256 vd0, __m256 vd1, __m256 mk0, __m256 mk1, int masked, const rq_math_t* m,
              __m256i acc[2], int nt, int st, int dt, const int PURE) {
    RQ_AVX2_FLAGS(PURE)
    __m256 lo[8], hi[8];
    RQ_AVX2_SRC_SWITCH(st, RQ_AVX2_CHUNK_LOAD)
    avx2_tr8x8_ps(lo);
    avx2_tr8x8_ps(hi);
    RQ_AVX2_DST_SWITCH(dt, RQ_AVX2_CHUNK_STORE)
}

RQ_TGT_AVX2 static inline __attribute__((always_inline)) void
rq_avx2_tile(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv, int64_t nbw,
             uint32_t lanes, const float* ssc, const float* dinv, const rq_math_t* m, int32_t* acc,
             int nt, int st, int dt, const int PURE) {
    const int64_t ssize = rq_avx2_size[st], dsize = rq_avx2_size[dt];
    const int64_t dstep = dB * dsize;
    /* scales of 1 where there are none (RQ_AVX2_MATH) */
    const int hs = m->has_sscale, hd = m->has_dscale;
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 vs0 = hs ? _mm256_loadu_ps(ssc) : one, vs1 = hs ? _mm256_loadu_ps(ssc + 8) : one;
    const __m256 vd0 = hd ? _mm256_loadu_ps(dinv) : one, vd1 = hd ? _mm256_loadu_ps(dinv + 8) : one;
    const __m256i li = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);
    const __m256 mk0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(
        _mm256_set1_epi32((int)(lanes & 0xff)), li), li));
    const __m256 mk1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(
        _mm256_set1_epi32((int)(lanes >> 8 & 0xff)), li), li));
    const int masked = lanes != 0xffffu;
    /* stream whole lines only: the 8 columns of a chunk are one contiguous run of lines
       (nChw16c), or each column is a line of its own (16 lanes of 4 bytes) */
    const int snt = nt && !m->has_sum && ((uintptr_t)dst & 63) == 0
                    && (dstep == 16 * dsize || (dsize == 4 && dstep % 64 == 0));
    __m256i vacc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    const char* rows[16];
    int64_t step[16];
    for (int a = 0; a < 16; a++) {
        int ok = lanes >> a & 1u;
        rows[a] = ok ? src + soff[a] * ssize : rq_zero_row;
        step[a] = ok ? ssize : 0;
    }
    int64_t b0 = 0;
    const char* rp[16];
    if (!masked) {
        for (; b0 + 8 <= nbv; b0 += 8) {
            _Pragma("GCC unroll 16")
            for (int a = 0; a < 16; a++) rp[a] = rows[a] + b0 * ssize;
            rq_avx2_chunk(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, 0, m, vacc,
                          snt, st, dt, PURE);
        }
    } else {
        for (; b0 + 8 <= nbv; b0 += 8) {
            for (int a = 0; a < 16; a++) rp[a] = rows[a] + b0 * step[a];
            rq_avx2_chunk(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, 1, m, vacc,
                          snt, st, dt, PURE);
        }
    }
    if (b0 < nbv) {
        char tb[16][64];            /* 8 columns of the widest type, f64 */
        int nb = (int)(nbv - b0);
        memset(tb, 0, sizeof(tb));
        for (int a = 0; a < 16; a++) {
            if (step[a]) memcpy(tb[a], rows[a] + b0 * ssize, (size_t)(nb * ssize));
            rp[a] = tb[a];
        }
        rq_avx2_chunk(rp, dst + b0 * dstep, dstep, nb, vs0, vs1, vd0, vd1, mk0, mk1, masked, m,
                      vacc, 0, st, dt, PURE);
    }
    for (int64_t b = nbv < 0 ? 0 : nbv; b < nbw; b++)
        memset(dst + b * dstep, 0, (size_t)(16 * dsize));
    if (acc) {
        _mm256_storeu_si256((__m256i*)acc, _mm256_add_epi32(_mm256_loadu_si256((__m256i*)acc), vacc[0]));
        _mm256_storeu_si256((__m256i*)(acc + 8), _mm256_add_epi32(_mm256_loadu_si256((__m256i*)(acc + 8)), vacc[1]));
    }
}

static inline int rq_avx2_pure(const rq_math_t* m) {
    return !(m->has_szp || m->has_sscale || m->has_sum || m->has_dscale || m->has_dzp || m->has_adj);
}

RQ_TGT_AVX2 RQ_ENTRY void
rq_avx2_block(const void* src, void* dst, const rq_block_t* k, const rq_math_t* m) {
    const int st = m->scode, dt = m->dcode;
    const int64_t dsize = rq_avx2_size[dt];
    const int pure = rq_avx2_pure(m);
    for (int64_t g = 0; g < k->ngroups; g++) {
        int32_t* acc = k->acc ? k->acc + 16 * g : (int32_t*)0;
        char* d = (char*)dst + (g == k->ngroups - 1 ? k->last : 16 * g) * dsize;
        if (pure)
            rq_avx2_tile((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw, k->lanes[g],
                         k->ssc + 16 * g, k->dinv + 16 * g, m, acc, (int)k->nt, st, dt, 1);
        else
            rq_avx2_tile((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw, k->lanes[g],
                         k->ssc + 16 * g, k->dinv + 16 * g, m, acc, (int)k->nt, st, dt, 0);
    }
    if (k->nt) _mm_sfence();
}

/* Rows: a contiguous run of n elements, 32 per step (four vectors), the rest through a zeroed
   stack copy. Scales: one value (sk 0, dk 0) or one per element (1). */
#define RQ_AVX2_PART_LOAD(SN, SSIZE) v = rq_avx2_ld_##SN(sb);
#define RQ_AVX2_PART_STORE(DN, DSIZE) rq_avx2_st_##DN(db, RQ_AVX2_MATH(v, vs, vd, DN, db), &acc);
/* r <= 8 elements through zeroed stack copies, so the loads and stores are whole vectors */
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void
rq_avx2_row_part(const char* s, char* d, int64_t r, const float* ssc, int64_t sk,
                 const float* dinv, int64_t dk, const rq_math_t* m, int st, int dt,
                 const int PURE) {
    RQ_AVX2_FLAGS(PURE)
    const int64_t ssize = rq_avx2_size[st], dsize = rq_avx2_size[dt];
    __m256i acc = _mm256_setzero_si256();
    char sb[64], db[64];
    float fs[8], fd[8];
    memset(sb, 0, sizeof(sb)); memset(db, 0, sizeof(db));
    memset(fs, 0, sizeof(fs)); memset(fd, 0, sizeof(fd));
    memcpy(sb, s, (size_t)(r * ssize));
    if (hm) memcpy(db, d, (size_t)(r * dsize));
    __m256 vs = _mm256_set1_ps(hs ? ssc[0] : 1.0f), vd = _mm256_set1_ps(hd ? dinv[0] : 1.0f);
    if (hs && sk) { memcpy(fs, ssc, (size_t)r * 4); vs = _mm256_loadu_ps(fs); }
    if (hd && dk) { memcpy(fd, dinv, (size_t)r * 4); vd = _mm256_loadu_ps(fd); }
    __m256 v;
    RQ_AVX2_SRC_SWITCH(st, RQ_AVX2_PART_LOAD)
    RQ_AVX2_DST_SWITCH(dt, RQ_AVX2_PART_STORE)
    memcpy(d, db, (size_t)(r * dsize));
}

#define RQ_AVX2_NT_LOAD(SN, SSIZE)                                                              \
    x = rq_avx2_ld_##SN(s + j * SSIZE); y = rq_avx2_ld_##SN(s + (j + 8) * SSIZE);
#define RQ_AVX2_NT_STORE(DN, DSIZE)                                                             \
    rq_avx2_nt16_##DN(d + j * DSIZE, RQ_AVX2_MATH(x, vs0, vd0, DN, d),                          \
                      RQ_AVX2_MATH(y, vs_, vd_, DN, d), acc2);
#define RQ_AVX2_ROW_LOAD(SN, SSIZE)                                                             \
    _Pragma("GCC unroll 4")                                                                     \
    for (int u = 0; u < 4; u++) v4[u] = rq_avx2_ld_##SN(s + (j + 8 * u) * SSIZE);
#define RQ_AVX2_ROW_STORE(DN, DSIZE)                                                            \
    _Pragma("GCC unroll 4")                                                                     \
    for (int u = 0; u < 4; u++) {                                                               \
        const int64_t e = j + 8 * u;                                                            \
        __m256 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) vs = _mm256_loadu_ps(ssc + e);                                            \
        if (hd && dk) vd = _mm256_loadu_ps(dinv + e);                                           \
        v4[u] = RQ_AVX2_MATH(v4[u], vs, vd, DN, d + e * DSIZE);                                 \
        if (!RQ_AVX2_PACK32_##DN) rq_avx2_st_##DN(d + e * DSIZE, v4[u], &acc);                  \
    }                                                                                           \
    if (RQ_AVX2_PACK32_##DN) rq_avx2_st32_##DN(d + j * DSIZE, v4);
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void
rq_avx2_row_body(const char* s, char* d, int64_t n, const float* ssc, int64_t sk,
                 const float* dinv, int64_t dk, const rq_math_t* m, int st, int dt,
                 const int PURE) {
    RQ_AVX2_FLAGS(PURE)
    const int64_t dsize = rq_avx2_size[dt];
    __m256i acc = _mm256_setzero_si256();
    __m256i acc2[2];                 /* the s8 streaming store's (rows carry no sums) */
    const __m256 vs1 = _mm256_set1_ps(hs ? ssc[0] : 1.0f), vd1 = _mm256_set1_ps(hd ? dinv[0] : 1.0f);
    int64_t j = 0;
    acc2[0] = acc2[1] = acc;
    /* streaming (large outputs of 1, 2 or 4 bytes): up to the first 64-byte boundary
       through the partial path, then 16 elements per step into aligned streaming stores */
    if (m->nt && !hm && dsize <= 4 && n >= 64 && ((uintptr_t)d % dsize) == 0) {
        while (j < n && ((uintptr_t)(d + j * dsize) & 63)) {
            int64_t r = (int64_t)((64 - ((uintptr_t)(d + j * dsize) & 63)) / dsize);
            if (r > 8) r = 8;
            if (r > n - j) r = n - j;
            rq_avx2_row_part(s + j * rq_avx2_size[st], d + j * dsize, r, ssc + (sk ? j : 0), sk,
                             dinv + (dk ? j : 0), dk, m, st, dt, PURE);
            j += r;
        }
        for (; j + 16 <= n; j += 16) {
            __m256 vs0 = vs1, vs_ = vs1, vd0 = vd1, vd_ = vd1, x, y;
            if (hs && sk) { vs0 = _mm256_loadu_ps(ssc + j); vs_ = _mm256_loadu_ps(ssc + j + 8); }
            if (hd && dk) { vd0 = _mm256_loadu_ps(dinv + j); vd_ = _mm256_loadu_ps(dinv + j + 8); }
            RQ_AVX2_SRC_SWITCH(st, RQ_AVX2_NT_LOAD)
            RQ_AVX2_DST_SWITCH(dt, RQ_AVX2_NT_STORE)
        }
        _mm_sfence();
    }
    for (; j + 32 <= n; j += 32) {
        __m256 v4[4];
        RQ_AVX2_SRC_SWITCH(st, RQ_AVX2_ROW_LOAD)
        RQ_AVX2_DST_SWITCH(dt, RQ_AVX2_ROW_STORE)
    }
    for (; j < n; j += 8) {
        const int64_t r = n - j < 8 ? n - j : 8;
        rq_avx2_row_part(s + j * rq_avx2_size[st], d + j * dsize, r, ssc + (sk ? j : 0), sk,
                         dinv + (dk ? j : 0), dk, m, st, dt, PURE);
    }
}

RQ_TGT_AVX2 RQ_ENTRY void
rq_avx2_row(const void* s, void* d, int64_t n, const float* ssc, int64_t sk, const float* dinv,
            int64_t dk, const rq_math_t* m) {
    const int st = m->scode, dt = m->dcode;
    if (rq_avx2_pure(m))
        rq_avx2_row_body((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, st, dt, 1);
    else
        rq_avx2_row_body((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, st, dt, 0);
}
#endif
