/* CPU features of the SIMD paths, detected in one place.
 *
 * Each extension module calls reorder_cpu_detect() when it is imported, before any kernel can
 * run; kernels only read the fields. Every field is exactly 0 or 1, and 0 until detection has
 * run, so an undetected feature is never taken as present. A field is 1 only when every ISA
 * extension its code is compiled for (__attribute__((target))) is present.
 */
#ifndef REORDER_CPU_H
#define REORDER_CPU_H

/* On loops that address many rows through runtime strides (the tiles' uniform loops): GCC's
 * induction-variable optimisation gives every row its own pointer, and with 16-32 rows those
 * live on the stack, a reload before each load and store; without it, rows are addressed
 * from one base (docs/kernels.md). */
#if defined(__GNUC__) && !defined(__clang__)
#define REORDER_ROW_LOOP __attribute__((optimize("no-ivopts")))
#else
#define REORDER_ROW_LOOP
#endif

typedef struct {
    int avx2;           /* 8x8 register transposes of the move tiles */
    int avx512;         /* F: 16x16 move tiles, streaming copies */
    int avx512_bw;      /* F, BW: the 1- and 2-byte move tiles */
    int avx512_conv;    /* F, BW, VL, DQ: conversion tiles and rows */
    int avx512_bf16;    /* the above + BF16: hardware f32 -> bf16 */
    int avx512_int8w;   /* the above + VBMI, VNNI: the int8 `4i16o4i` weight kernel */
    int avx2_f16c;      /* AVX2 + F16C: the 8-wide conversion tiles and rows */
    int avx512_vbmi;    /* F, BW, VBMI: the byte permutes of the weight block kernel */
} reorder_cpu_t;

static reorder_cpu_t reorder_cpu;

static void reorder_cpu_detect(void) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    reorder_cpu_t c;
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2") != 0;
    c.avx512 = __builtin_cpu_supports("avx512f") != 0;
    c.avx512_bw = c.avx512 && __builtin_cpu_supports("avx512bw") != 0;
    c.avx512_conv = c.avx512_bw && __builtin_cpu_supports("avx512vl") != 0
                    && __builtin_cpu_supports("avx512dq") != 0;
    c.avx512_bf16 = c.avx512_conv && __builtin_cpu_supports("avx512bf16") != 0;
    c.avx512_int8w = c.avx512_conv && __builtin_cpu_supports("avx512vbmi") != 0
                     && __builtin_cpu_supports("avx512vnni") != 0;
    c.avx2_f16c = c.avx2 && __builtin_cpu_supports("f16c") != 0;
    c.avx512_vbmi = c.avx512_bw && __builtin_cpu_supports("avx512vbmi") != 0;
    reorder_cpu = c;
#endif
}
#endif
