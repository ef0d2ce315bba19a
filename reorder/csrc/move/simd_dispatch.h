/* The move kernels' run-time choice of tile (tile_tN: by element size, CPU and the plan's
 * choices), the streaming and grid copies, and the names the runners report. The tiles
 * follow the contract of tile_rows.h and live in tiles_*.h. */
#ifndef REORDER_MOVE_SIMD_DISPATCH_H
#define REORDER_MOVE_SIMD_DISPATCH_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/tile_rows.h"
#include "move/tiles_portable.h"
#include "move/tiles_wide.h"
#include "move/tiles_narrow_avx2.h"
#include "move/tiles_narrow_avx512.h"
#include "move/tiles_few_rows.h"

#if REORDER_X86
/* Non-temporal copy: aligns dst to 64 bytes, streams whole lines, copies the tail. */
__attribute__((target("avx512f")))
static void copy_nt_avx512(void* dst, const void* src, int64_t nbytes) {
    char* d = (char*)dst;
    const char* s = (const char*)src;
    int64_t head = (int64_t)((64 - ((uintptr_t)d & 63)) & 63);
    if (head > nbytes) head = nbytes;
    memcpy(d, s, (size_t)head);
    d += head; s += head; nbytes -= head;
    for (; nbytes >= 256; nbytes -= 256, d += 256, s += 256) {
        __m512 x0 = _mm512_loadu_ps(s), x1 = _mm512_loadu_ps(s + 64);
        __m512 x2 = _mm512_loadu_ps(s + 128), x3 = _mm512_loadu_ps(s + 192);
        _mm512_stream_ps((float*)d, x0);
        _mm512_stream_ps((float*)(d + 64), x1);
        _mm512_stream_ps((float*)(d + 128), x2);
        _mm512_stream_ps((float*)(d + 192), x3);
    }
    for (; nbytes >= 64; nbytes -= 64, d += 64, s += 64)
        _mm512_stream_ps((float*)d, _mm512_loadu_ps(s));
    memcpy(d, s, (size_t)nbytes);
}

static inline void reorder_sfence(void) { _mm_sfence(); }
#else
static inline void reorder_sfence(void) {}
#endif
static inline int reorder_have_avx512(void) { return reorder_cpu.avx512; }
static inline int reorder_have_avx2(void) { return reorder_cpu.avx2; }
static inline int reorder_have_avx512bw(void) { return reorder_cpu.avx512_bw; }

/* ---- dispatch -------------------------------------------------------------------------- */
static int reorder_simd_disabled = 0;   /* set from Python to test the portable path */
/* Which register transpose the 4-byte tiles use: 512 (16x16) or 256 (8x8); set at import
 * (AVX-512 where available) and switched by tests to check every path. */
static int reorder_tile_bits = 0;

#define REORDER_TILE_ENTRY(N, T, SCALAR)                                                   \
static inline void tile_t##N(const T* s, const arows_t* A, int64_t na, T* d,              \
                             const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,    \
                             int nt) {                                                    \
    (void)nt; SCALAR(s, A, na, d, rows, bs, nbv, nbw);                                    \
}
/* 4- and 8-byte elements: the AVX-512 tile (which may stream), else the AVX2 one, else the
 * portable loops. */
#if REORDER_X86
#define REORDER_TILE_WIDE_ENTRY(N, T, BITS)                                                \
static inline void tile_t##N(const T* s, const arows_t* A, int64_t na, T* d,              \
                             const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,    \
                             int nt) {                                                    \
    if (!reorder_simd_disabled && reorder_tile_bits == 512 && reorder_have_avx512()) {    \
        tile_avx512_u##BITS(s, A, na, d, rows, bs, nbv, nbw, nt);                         \
        return;                                                                           \
    }                                                                                     \
    if (!reorder_simd_disabled && reorder_tile_bits >= 256 && reorder_have_avx2()) {      \
        tile_avx2_u##BITS(s, A, na, d, rows, bs, nbv, nbw);                               \
        return;                                                                           \
    }                                                                                     \
    tile_scalar_u##BITS(s, A, na, d, rows, bs, nbv, nbw);                                 \
}
#else
#define REORDER_TILE_WIDE_ENTRY(N, T, BITS) REORDER_TILE_ENTRY(N, T, tile_scalar_u##BITS)
#endif
REORDER_TILE_WIDE_ENTRY(4, uint32_t, 32)
REORDER_TILE_WIDE_ENTRY(8, uint64_t, 64)

/* 1- and 2-byte elements: the few-rows path where it fits (tiles_few_rows.h), else AVX2
 * register transposes (tiles_narrow_avx2.h) on every SIMD path, except words on the 512-bit path
 * of a CPU with BW, where the AVX-512 tiles (tiles_narrow_avx512.h) take the shapes they
 * measured faster on. */
#if REORDER_X86
static inline int narrow512_on(void) {
    return !reorder_simd_disabled && reorder_tile_bits == 512 && reorder_have_avx512bw();
}
static inline int narrow256_on(void) {
    return !reorder_simd_disabled && reorder_tile_bits >= 256 && reorder_have_avx2();
}
/* A padded block with few data rows (nchw C=3 -> nChw16c) skips the transpose. */
static inline int tile_few(const void* s, const arows_t* A, int64_t na, void* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt,
                           int size) {
    int nv = few_rows(A, na, rows, size);
    if (!nv) return 0;
    if (narrow512_on())
        tile_few512((const char*)s, A, na, (char*)d, bs, nbv, nbw, nt, size, nv);
    else if (narrow256_on())
        tile_few2((const char*)s, A, na, (char*)d, bs, nbv, nbw, size, nv);
    else
        return 0;
    return 1;
}
static inline void tile_t1(const uint8_t* s, const arows_t* A, int64_t na, uint8_t* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (tile_few(s, A, na, d, rows, bs, nbv, nbw, nt, 1)) return;
    if (narrow512_on() && narrow512_bytes(A, na, nbw, rows)) {
        tile_avx512_u8_square(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    if (narrow512_on() && narrow_tall(A, na, nbw, 1)) {
        tile_avx512_u8_tall(s, A, na, d, rows, bs, nbv, nbw);
        return;
    }
    if (narrow256_on()) {
        tile_avx2_u8(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    tile_scalar_u8(s, A, na, d, rows, bs, nbv, nbw);
}
static inline void tile_t2(const uint16_t* s, const arows_t* A, int64_t na, uint16_t* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (tile_few(s, A, na, d, rows, bs, nbv, nbw, nt, 2)) return;
    if (narrow512_on() && narrow512_words(A, na, nt)) {
        tile_avx512_u16(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    if (narrow256_on()) {
        tile_avx2_u16(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    tile_scalar_u16(s, A, na, d, rows, bs, nbv, nbw);
}
#else
REORDER_TILE_ENTRY(1, uint8_t, tile_scalar_u8)
REORDER_TILE_ENTRY(2, uint16_t, tile_scalar_u16)
#endif

/* Copy one contiguous run (copy_bytes, after copy_grid below). Short runs of a fixed size
 * (a 16-float block row) become a few inlined vector moves instead of a memcpy call. */
#if REORDER_X86
__attribute__((target("avx512f")))
static inline void stream_line(void* d, const void* s) {
    _mm512_stream_ps((float*)d, _mm512_loadu_ps(s));
}
#endif

/* A grid of nr x nc runs of nbytes each (byte strides: rss/rds between rows, css/cds between
 * the columns of a row): nhwc -> nChw16c copies, per pixel, one 16-lane run into each channel
 * block. A fixed run size makes each copy a few inlined vector moves. */
#define REORDER_GRID_LOOP(N)                                                        \
    for (int64_t r = 0; r < nr; r++) {                                              \
        const char* sr = s + r * rss;                                               \
        char* dr = d + r * rds;                                                     \
        for (int64_t c = 0; c < nc; c++)                                            \
            memcpy(dr + c * cds, sr + c * css, N);                                  \
    }

#if REORDER_X86
/* One 64-byte line from 64 / nbytes runs (16, 32 or 64 bytes each) at p, p + step, ... */
__attribute__((target("avx512f")))
static inline __m512i grid_line(const char* p, int64_t step, int64_t nbytes) {
    if (nbytes == 64)
        return _mm512_loadu_si512(p);
    if (nbytes == 32)
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)p)),
                                  _mm256_loadu_si256((const __m256i*)(p + step)), 1);
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)p));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + step)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + 2 * step)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + 3 * step)), 3);
}

/* The grid with streamed stores, when each run is whole aligned lines (f64 nhwc -> nChw16c),
 * or dst runs on along the columns (nChw16c -> nhwc: a pixel's channels) or along the rows
 * (nhwc -> nChw16c: a channel block's pixels) in whole aligned lines; returns 0, having
 * written nothing, when the shape does not allow it. */
__attribute__((target("avx512f")))
static int copy_grid_nt(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                        int64_t nc, int64_t css, int64_t cds, int64_t nbytes) {
    int64_t g = 64 / (nbytes > 0 ? nbytes : 1);
    if ((uintptr_t)d & 63)
        return 0;
    if ((nbytes == 128 || nbytes == 256) && rds % 64 == 0 && cds % 64 == 0) {
        /* runs of whole lines (an f64 block of 16, f32 of 32) */
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                copy_nt_avx512(d + r * rds + c * cds, s + r * rss + c * css, nbytes);
        return 1;
    }
    if (nbytes != 16 && nbytes != 32 && nbytes != 64)
        return 0;
    if (cds == nbytes && rds % 64 == 0) {
        int64_t whole = nc - nc % g;
        for (int64_t r = 0; r < nr; r++) {
            for (int64_t c = 0; c < whole; c += g)
                _mm512_stream_si512((__m512i*)(d + r * rds + c * nbytes),
                                    grid_line(s + r * rss + c * css, css, nbytes));
            for (int64_t c = whole; c < nc; c++)
                memcpy(d + r * rds + c * nbytes, s + r * rss + c * css, (size_t)nbytes);
        }
        return 1;
    }
    if (rds == nbytes && cds % 64 == 0) {
        /* a line of each column per g rows: the reads stay sequential */
        int64_t whole = nr - nr % g;
        for (int64_t r = 0; r < whole; r += g)
            for (int64_t c = 0; c < nc; c++)
                _mm512_stream_si512((__m512i*)(d + c * cds + r * nbytes),
                                    grid_line(s + c * css + r * rss, rss, nbytes));
        for (int64_t r = whole; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                memcpy(d + c * cds + r * nbytes, s + c * css + r * rss, (size_t)nbytes);
        return 1;
    }
    return 0;
}

/* The grid with cached stores where dst runs on along the rows in 16- or 32-byte runs
 * (nhwc -> nChw16c bytes in the cache: a block's pixels): a line of each column per g rows,
 * one store where a store per run measured slower. Returns the rows done (a multiple of
 * g); the caller copies the rest. */
__attribute__((target("avx512f")))
static int64_t copy_grid_row_lines(char* d, const char* s, int64_t nr, int64_t rss, int64_t nc,
                                   int64_t css, int64_t cds, int64_t nbytes) {
    int64_t g = 64 / nbytes, whole = nr - nr % g;
    for (int64_t r = 0; r < whole; r += g)
        for (int64_t c = 0; c < nc; c++)
            _mm512_storeu_si512(d + c * cds + r * nbytes, grid_line(s + c * css + r * rss, rss, nbytes));
    return whole;
}
#endif

#if REORDER_X86
/* The two-source qword permutes that interleave two columns' 64 bytes of q-qword runs: the
 * first 64 interleaved bytes from idx_lo, the next from idx_hi. */
static inline void pair_tables(int64_t q, int64_t* idx_lo, int64_t* idx_hi) {
    for (int j = 0; j < 8; j++) {                          /* run j / q of column (j / q) & 1 */
        int64_t run = j / q, col = run & 1, pos = (run >> 1) * q + j % q;
        idx_lo[j] = col * 8 + pos;
        idx_hi[j] = col * 8 + pos + 4;
    }
}

/* 64 bytes of each column (a, b) interleaved into 128 bytes at o. */
__attribute__((target("avx512f")))
static inline void pair_store(char* o, __m512i a, __m512i b, __m512i lo, __m512i hi, int stream) {
    __m512i x = _mm512_permutex2var_epi64(a, lo, b), y = _mm512_permutex2var_epi64(a, hi, b);
    if (stream) {
        _mm512_stream_si512((__m512i*)o, x);
        _mm512_stream_si512((__m512i*)(o + 64), y);
    } else {
        _mm512_storeu_si512(o, x);
        _mm512_storeu_si512(o + 64, y);
    }
}
#endif

#if REORDER_X86
/* Two columns of 8- or 16-byte runs that one side holds interleaved and the other as two
 * dense columns (nChw8c <-> nChw16c of bytes and words: a pixel's two 8-lane halves): 64
 * bytes of each column against 128 interleaved, two two-source permutes per 128 bytes,
 * where the grid loop would copy each run alone. 32-byte runs measured slower this way than
 * as the loop's two moves a line. The caller checks nc == 2 and nbytes 8 or 16; returns 0,
 * having written nothing, for other shapes. */
__attribute__((target("avx512f")))
static int copy_grid_pair(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                          int64_t nc, int64_t css, int64_t cds, int64_t nbytes, int nt) {
    int64_t k = 64 / (nbytes > 0 ? nbytes : 1);          /* rows in 64 bytes of a column */
    if (nr < k)
        return 0;
    int64_t q = nbytes / 8;                                /* qwords a run */
    __m512i lo, hi;
    int64_t idx_lo[8], idx_hi[8];
    pair_tables(q, idx_lo, idx_hi);
    lo = _mm512_loadu_si512(idx_lo);
    hi = _mm512_loadu_si512(idx_hi);
    int64_t whole = nr - nr % k, r;
    if (cds == nbytes && rds == 2 * nbytes && rss == nbytes) {          /* to interleaved */
        int stream = nt && ((uintptr_t)d & 63) == 0;
        for (r = 0; r < whole; r += k)
            pair_store(d + r * rds, _mm512_loadu_si512(s + r * rss),
                       _mm512_loadu_si512(s + css + r * rss), lo, hi, stream);
    } else if (css == nbytes && rss == 2 * nbytes && rds == nbytes) {   /* from interleaved */
        /* the inverse permutes: column c's 64 bytes from the 128 interleaved ones */
        int64_t idx_a[8], idx_b[8];
        for (int j = 0; j < 8; j++) {
            idx_a[j] = -1;
            idx_b[j] = -1;
        }
        for (int j = 0; j < 16; j++) {                     /* interleaved qword j */
            int64_t run = (j % 8) / q + (j / 8) * (8 / q), col = run & 1;
            int64_t pos = (run >> 1) * q + j % q;
            if (col == 0) idx_a[pos] = j; else idx_b[pos] = j;
        }
        lo = _mm512_loadu_si512(idx_a);
        hi = _mm512_loadu_si512(idx_b);
        int stream = nt && ((uintptr_t)d & 63) == 0 && cds % 64 == 0;
        for (r = 0; r < whole; r += k) {
            const char* i = s + r * rss;
            __m512i x = _mm512_loadu_si512(i), y = _mm512_loadu_si512(i + 64);
            __m512i c0 = _mm512_permutex2var_epi64(x, lo, y);
            __m512i c1 = _mm512_permutex2var_epi64(x, hi, y);
            if (stream) {
                _mm512_stream_si512((__m512i*)(d + r * rds), c0);
                _mm512_stream_si512((__m512i*)(d + cds + r * rds), c1);
            } else {
                _mm512_storeu_si512(d + r * rds, c0);
                _mm512_storeu_si512(d + cds + r * rds, c1);
            }
        }
    } else {
        return 0;
    }
    for (r = whole; r < nr; r++) {
        memcpy(d + r * rds, s + r * rss, (size_t)nbytes);
        memcpy(d + r * rds + cds, s + r * rss + css, (size_t)nbytes);
    }
    return 1;
}
#endif

#if REORDER_X86
/* The two-column pair into interleaved runs (as copy_grid_pair) where the columns' runs hold
 * nv0 and nv1 valid bytes, the rest zeros (nChw8c -> nChw16c at C=19: dst's last block takes
 * src's block of 3 channels and one past the data): each column's 64 bytes load under its
 * run mask repeated, and a column with no data loads nothing. The per-run masked copies
 * this replaces stored 8 bytes at a time. The caller checks AVX-512BW; returns 0, having
 * written nothing, for other shapes. */
__attribute__((target("avx512f,avx512bw")))
static int copy_grid_pair_part(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                               int64_t css, int64_t cds, int64_t nbytes, int64_t nv0,
                               int64_t nv1, int nt) {
    if (!(nbytes == 8 || nbytes == 16) || cds != nbytes || rds != 2 * nbytes || rss != nbytes
            || nr < 64 / nbytes)
        return 0;
    const int64_t k = 64 / nbytes, q = nbytes / 8, whole = nr - nr % k;
    uint64_t m0 = (1ULL << nv0) - 1, m1 = (1ULL << nv1) - 1;    /* nv < 64 */
    for (int64_t w = nbytes; w < 64; w *= 2) {
        m0 |= m0 << w;
        m1 |= m1 << w;
    }
    int64_t idx_lo[8], idx_hi[8];
    pair_tables(q, idx_lo, idx_hi);
    const __m512i lo = _mm512_loadu_si512(idx_lo), hi = _mm512_loadu_si512(idx_hi);
    const int stream = nt && ((uintptr_t)d & 63) == 0;
    int64_t r;
    for (r = 0; r < whole; r += k)
        pair_store(d + r * rds, _mm512_maskz_loadu_epi8(m0, s + r * rss),
                   _mm512_maskz_loadu_epi8(m1, s + css + r * rss), lo, hi, stream);
    for (; r < nr; r++) {
        char* o = d + r * rds;
        memcpy(o, s + r * rss, (size_t)nv0);
        memset(o + nv0, 0, (size_t)(nbytes - nv0));
        memcpy(o + nbytes, s + css + r * rss, (size_t)nv1);
        memset(o + nbytes + nv1, 0, (size_t)(nbytes - nv1));
    }
    return 1;
}
#endif

static inline int copy_grid_pair_padded(char* d, const char* s, int64_t nr, int64_t rss,
                                        int64_t rds, int64_t css, int64_t cds, int64_t nbytes,
                                        int64_t nv0, int64_t nv1, int nt) {
#if REORDER_X86
    return !reorder_simd_disabled && reorder_have_avx512bw()
        && copy_grid_pair_part(d, s, nr, rss, rds, css, cds, nbytes, nv0, nv1, nt);
#else
    (void)d; (void)s; (void)nr; (void)rss; (void)rds; (void)css; (void)cds; (void)nbytes;
    (void)nv0; (void)nv1; (void)nt;
    return 0;
#endif
}

/* nr rows of nc runs of nbytes each: the two-column or streamed form where the shape allows
 * it, else the loop for the run size. */
static inline void copy_grid(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nc, int64_t css, int64_t cds, int64_t nbytes, int nt) {
#if REORDER_X86
    /* (the shape first: copy_bytes comes here for every short run) */
    if (nc == 2 && (nbytes == 8 || nbytes == 16) && !reorder_simd_disabled && reorder_have_avx512()
            && copy_grid_pair(d, s, nr, rss, rds, nc, css, cds, nbytes, nt))
        return;
    if (nt && !reorder_simd_disabled && reorder_have_avx512()
            && copy_grid_nt(d, s, nr, rss, rds, nc, css, cds, nbytes))
        return;
    if (!nt && (nbytes == 16 || nbytes == 32) && rds == nbytes && nr >= 64 / nbytes
            && !reorder_simd_disabled && reorder_have_avx512()) {
        int64_t done = copy_grid_row_lines(d, s, nr, rss, nc, css, cds, nbytes);
        d += done * rds;
        s += done * rss;
        nr -= done;
    }
#endif
    (void)nt;
    switch (nbytes) {
    case 4: REORDER_GRID_LOOP(4) return;
    case 8: REORDER_GRID_LOOP(8) return;
    case 16: REORDER_GRID_LOOP(16) return;
    case 32: REORDER_GRID_LOOP(32) return;
    case 64: REORDER_GRID_LOOP(64) return;
    case 128: REORDER_GRID_LOOP(128) return;
    case 256: REORDER_GRID_LOOP(256) return;
    default: REORDER_GRID_LOOP((size_t)nbytes) return;
    }
}

static inline void copy_bytes(void* d, const void* s, int64_t nbytes, int nt) {
#if REORDER_X86
    if (nt && nbytes == 64 && ((uintptr_t)d & 63) == 0 && !reorder_simd_disabled
            && reorder_have_avx512()) {
        stream_line(d, s);          /* one block row of 16 floats */
        return;
    }
    if (nt && nbytes >= 64 && !reorder_simd_disabled && reorder_have_avx512()) {
        copy_nt_avx512(d, s, nbytes);
        return;
    }
#endif
    copy_grid((char*)d, (const char*)s, 1, 0, 0, 1, 0, 0, nbytes, 0);   /* one fixed-size run */
}

/* nr runs of a padded column (byte strides rss/rds): nvalid bytes copied, then zeros up to
 * nwrite. With AVX-512BW a masked load reads only the valid bytes, so a 64-byte chunk is
 * one load and one store instead of a memcpy and a memset call. */
#if REORDER_X86
__attribute__((target("avx512f,avx512bw")))
static void copy_part_avx512(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nvalid, int64_t nwrite) {
    if (rss == nwrite && rds == nwrite && (nwrite == 16 || nwrite == 32 || nwrite == 64)) {
        /* runs dense on both sides (a padded block's rows, nChw16c -> nChw16c): 64 bytes at a
           time under the runs' mask repeated, as fast as a copy */
        uint64_t m = nvalid >= 64 ? ~0ULL : (1ULL << nvalid) - 1;
        for (int64_t w = nwrite; w < 64; w *= 2) m |= m << w;
        const int64_t n = nr * nwrite, whole = n - n % 64;
        for (int64_t k = 0; k < whole; k += 64)
            _mm512_storeu_si512(d + k, _mm512_maskz_loadu_epi8(m, s + k));
        if (whole < n) {
            const __mmask64 t = (1ULL << (n - whole)) - 1;
            _mm512_mask_storeu_epi8(d + whole, t, _mm512_maskz_loadu_epi8(m & t, s + whole));
        }
        return;
    }
    for (int64_t k = 0; k < nwrite; k += 64) {
        int64_t v = nvalid - k < 0 ? 0 : nvalid - k > 64 ? 64 : nvalid - k;
        int64_t w = nwrite - k > 64 ? 64 : nwrite - k;
        __mmask64 mv = v == 64 ? ~0ULL : (1ULL << v) - 1, mw = w == 64 ? ~0ULL : (1ULL << w) - 1;
        const char* sk = s + k;
        char* dk = d + k;
        if (w == 64) {
            for (int64_t r = 0; r < nr; r++)
                _mm512_storeu_si512(dk + r * rds, _mm512_maskz_loadu_epi8(mv, sk + r * rss));
        } else if (w == 32) {
            for (int64_t r = 0; r < nr; r++)
                _mm256_storeu_si256((__m256i*)(dk + r * rds),
                    _mm512_castsi512_si256(_mm512_maskz_loadu_epi8(mv, sk + r * rss)));
        } else if (w == 16) {
            int64_t r = 0;
            if (rds == 16) {
                /* rows that run on in dst (nhwc -> nChw16c bytes): four to a line */
                for (; r + 4 <= nr; r += 4) {
                    __m512i x = _mm512_maskz_loadu_epi8(mv, sk + r * rss);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 1) * rss)), 1);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 2) * rss)), 2);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 3) * rss)), 3);
                    _mm512_storeu_si512(dk + r * 16, x);
                }
            }
            for (; r < nr; r++)
                _mm_storeu_si128((__m128i*)(dk + r * rds),
                    _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(mv, sk + r * rss)));
        } else {
            for (int64_t r = 0; r < nr; r++)
                _mm512_mask_storeu_epi8(dk + r * rds, mw, _mm512_maskz_loadu_epi8(mv, sk + r * rss));
        }
    }
}
#endif

/* True when copy_part runs its masked loads (AVX-512BW), not the memcpy and memset per run */
static inline int copy_part_masked(void) {
#if REORDER_X86
    return !reorder_simd_disabled && reorder_have_avx512bw();
#else
    return 0;
#endif
}

static inline void copy_part(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nvalid, int64_t nwrite) {
#if REORDER_X86
    if (!reorder_simd_disabled && reorder_have_avx512bw()) {
        copy_part_avx512(d, s, nr, rss, rds, nvalid, nwrite);
        return;
    }
#endif
    for (int64_t r = 0; r < nr; r++) {
        memcpy(d + r * rds, s + r * rss, (size_t)nvalid);
        memset(d + r * rds + nvalid, 0, (size_t)(nwrite - nvalid));
    }
}

/* The tile path tile_tN takes now for elements of `size` bytes and `na` tile rows (tests
 * assert it, so a path that silently falls back is caught). */
static const char* reorder_tile_name(int size, const arows_t* A, int64_t na, int64_t nb,
                                     const rows_t* rows, int nt) {
    int on = REORDER_X86 && !reorder_simd_disabled;
    int avx512 = on && reorder_tile_bits == 512 && reorder_have_avx512();
    int avx2 = on && reorder_tile_bits >= 256 && reorder_have_avx2();
#if REORDER_X86
    if ((size == 1 || size == 2) && few_rows(A, na, rows, size)) {   /* as tile_few */
        if (narrow512_on()) return "avx512 few rows";
        if (narrow256_on()) return "avx2 few rows";
    }
    int w512 = avx512 && reorder_have_avx512bw() && size == 2 ? narrow512_words(A, na, nt) : 0;
    if (w512) return w512 == 2 ? "avx512 words 32x16" : "avx512 words 16x32";
    if (size == 1 && narrow512_on() && narrow512_bytes(A, na, nb, rows)) return "avx512 bytes 64x16";
    if (size == 1 && narrow512_on() && narrow_tall(A, na, nb, 1))
        return "avx2 bytes 32x16, avx512 edges";   /* tile_avx512_u8_tall */
    if (avx2 && size == 1) return narrow_tall(A, na, nb, 1) ? "avx2 bytes 32x16" : "avx2 bytes 16x16";
    if (avx2 && size == 2) return narrow_tall(A, na, nb, 2) ? "avx2 words 16x8" : "avx2 words 16x16";
#endif
    (void)A; (void)na; (void)nb; (void)rows;
    switch (size) {
    case 4: return avx512 ? "avx512 16x16" : avx2 ? "avx2 8x8" : "portable";
    case 8: return avx512 ? "avx512 qwords 8x8" : avx2 ? "avx2 qwords 8x4" : "portable";
    default: return "portable";
    }
}

static const char* reorder_simd_name(void) {
    if (reorder_simd_disabled) return "portable C (SIMD disabled)";
    if (reorder_tile_bits == 512 && reorder_have_avx512()) return "avx512f (16x16 tiles)";
    if (reorder_tile_bits >= 256 && reorder_have_avx2()) return "avx2 (8x8 tiles)";
    return "portable C";
}
#endif
