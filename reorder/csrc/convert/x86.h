/* What every x86 conversion header takes: whether the SIMD paths compile here (RQ_X86),
 * the AVX-512 target (RQ_TGT) and entry-point visibility, the register transposes, and the
 * element type pairs each family is written for (RQ_EACH_PAIR, RQ_TABLE). Built with
 * __attribute__((target)), never with -march=native. */
#ifndef REORDER_CONVERT_X86_H
#define REORDER_CONVERT_X86_H
#include <stdint.h>
#include <string.h>
#include "convert/kernel_args.h"
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RQ_X86 1
/* A kernel's entry point: defined in its family's file, reached through the tables of
   convert/simd_dispatch.h, and not exported from the module. */
#define RQ_ENTRY __attribute__((visibility("hidden")))
#include <immintrin.h>
#include "common/transpose_avx512.h"
#include "common/transpose_avx2.h"
#define RQ_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
/* Tells the compiler that the pointers may have changed: a loop that says so each
   iteration reads its tables (lane offsets, scales) at displacements from them, where gcc
   would hoist the address of every entry out of the loop and spill them all (a reload from
   the stack before each load of a tile's rows; docs/kernels.md has the measurements). */
#define RQ_OPAQUE2(a, b) __asm__("" : "+r"(a), "+r"(b))
/* Round half to even without raising exceptions, as oneDNN rounds (AVX-512 and AVX2). */
#define RQ_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define RQ_OPAQUE3(a, b, c) __asm__("" : "+r"(a), "+r"(b), "+r"(c))


/* M(SN, SSIZE, DN, DSIZE, TGT, ST) for every pair of types of the AVX-512 families (the
   hardware bf16 among the destinations), and a kernel table's row for source SN / column for
   destination DN. Sources of one size are one body, told their type at run time
   (avx512_loads_stores.h) and named by the rows of both: s8 and u8 ("b8"), f16 and bf16
   ("h16"), f32 and s32 ("x32"). The AVX-512 families' s8 and u8 destinations are one body
   too, and so are their f16 and bf16 ones (but the hardware bf16), each named by both columns
   (RQ_TABLE_ROW_B8). The AVX2 family is one body for every pair (convert/simd_avx2.c). */
#define RQ_EACH_DST(M, SN, SSIZE)                                                               \
    M(SN, SSIZE, f32, 4, RQ_TGT, f32) M(SN, SSIZE, f64, 8, RQ_TGT, f64)                         \
    M(SN, SSIZE, h16, 2, RQ_TGT, h16) M(SN, SSIZE, b8, 1, RQ_TGT, b8)                           \
    M(SN, SSIZE, s32, 4, RQ_TGT, s32) M(SN, SSIZE, bf16, 2, RQ_TGT_BF16, bf16hw)
#define RQ_EACH_PAIR(M)                                                                         \
    RQ_EACH_DST(M, x32, 4) RQ_EACH_DST(M, f64, 8) RQ_EACH_DST(M, h16, 2) RQ_EACH_DST(M, b8, 1)
#define RQ_TABLE_ROW_B8(P, SN) { P##SN##_f32, P##SN##_f64, P##SN##_h16, P##SN##_h16, P##SN##_b8, \
                                 P##SN##_b8, P##SN##_s32 }
/* s32 to f16 or bf16 has no entry: the library refuses the pairs (as oneDNN), so the x32
   bodies into 16-bit outputs serve f32 alone, and a call would take the portable code */
#define RQ_TABLE_ROW_S32(P, SN) { P##SN##_f32, P##SN##_f64, 0, 0, P##SN##_b8, P##SN##_b8,         \
                                  P##SN##_s32 }
#define RQ_TABLE(P, ROW) { ROW(P, x32), ROW(P, f64), ROW(P, h16), ROW(P, h16), ROW(P, b8),       \
                           ROW(P, b8), RQ_TABLE_ROW_S32(P, x32) }
#define RQ_TABLE_BF16HW(P) { P##x32_bf16hw, P##f64_bf16hw, P##h16_bf16hw, P##h16_bf16hw,         \
                             P##b8_bf16hw, P##b8_bf16hw, 0 }
#else
#define RQ_X86 0
#endif
#endif
