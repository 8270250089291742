/* dispatch.h - the kernels in use, chosen once at start-up from the CPU's features.
 *
 * The traits table (types.h) holds the portable reference kernels; this table starts as a copy
 * of it and per-ISA files (avx2.c, avx512.c, neon.c, neon_dot.c, ...) replace the entries they do
 * faster. EL_FORCE_REFERENCE=1 in the environment keeps the reference kernels (to compare or to
 * debug); EL_ISA_MAX=avx2 (or avx512, neon) stops at that level; EL_NO_GEMM=1 leaves out the
 * gemm kernels (el_matmul then takes the tiles and gemvs). */
#ifndef EL_KERNELS_DISPATCH_H
#define EL_KERNELS_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/attend.h"
#include "kernels/gemm.h"
#include "kernels/swiglu.h"
#include "kernels/types.h"

/* A tile kernel computes EL_TILE x EL_TILE outputs of a matrix product at once, so each weight
 * block is loaded and unpacked once for EL_TILE activation rows and each activation block once
 * for EL_TILE weight rows (prompt processing):
 *   y[r * ldy + o] = dot(weight row o, activation row r)   for r, o < EL_TILE
 * with weight row o at w + o * w_stride and activation row r at a + r * a_stride (both of n
 * elements, n a multiple of the block size). Results agree with vec_dot to float rounding. */
enum { EL_TILE = 4 };
typedef void (*el_tile_fn)(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                           const void *a, size_t a_stride);

/* A gemv kernel computes n_rows consecutive outputs for one activation row (a decode step):
 *   y[o] = dot(weight row o, a)   for o < n_rows
 * with weight row o at w + o * w_stride (n elements, n a multiple of the block size). It reads
 * the rows in address order and prepares what depends only on the activations once for all of
 * them. Each y[o] depends only on row o and a (not on n_rows or where the rows start), and
 * agrees with vec_dot to float rounding. */
typedef void (*el_gemv_fn)(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                           const void *a);

/* A multi-row gemv computes the same for n_act (2..EL_GEMV_MULTI_MAX) activation rows at once,
 * a_stride bytes apart, reading each weight row once: y[k * ldy + o] = dot(row o, a_k), each
 * with the bits the type's gemv gives it (concurrent sequences). */
enum { EL_GEMV_MULTI_MAX = 3 };
typedef void (*el_gemv_multi_fn)(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                 const void *w, size_t w_stride, const void *a, size_t a_stride);

typedef struct el_kernels {
    const char *isa;                          /* "reference", "avx2", "neon-dotprod", ... */
    el_vec_dot_fn vec_dot[EL_TYPE_COUNT];     /* by weight type; NULL where the type has none */
    el_from_float_fn quantize[EL_TYPE_COUNT]; /* by activation type, and EL_TYPE_F16 (the KV
                                               * cache's rows): same bytes as from_float */
    el_tile_fn tile[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    el_gemm_fn gemm[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    el_attend_fn attend;                      /* attention of one row and kv head */
    el_swiglu_fn swiglu;                      /* the feed-forward's gated activation */
    el_gemv_fn gemv[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    el_gemv_multi_fn gemv_multi[EL_TYPE_COUNT]; /* by weight type; NULL: gemv row by row */
    bool gemm_signed;                         /* the gemm kernels take signed weights (gemm.h) */
} el_kernels;

/* The table in use; filled on first call (thread-safe), constant afterwards. */
const el_kernels *el_kernels_get(void);

/* Makes fn the gemm kernel of every weight type gemm.h covers; signed_weights: it takes the
 * weight quants signed and wants no aux offset terms. */
void el_kernels_set_gemm(el_kernels *k, el_gemm_fn fn, bool signed_weights);

/* Fills k with the reference kernels of the traits table (and no tiles, gemms or gemvs). */
void el_kernels_reference(el_kernels *k);

/* Each of these replaces entries of k with its kernels and returns true if they were built in
 * and this CPU runs them; otherwise it leaves k alone and returns false. Later ones in this list
 * are preferred (the dispatcher applies them in order). */
bool el_kernels_avx2(el_kernels *k);         /* AVX2, FMA and F16C */
/* These add to el_kernels_avx2, which applies them once it has accepted the CPU. */
bool el_gemm_avx2(el_kernels *k);            /* its packed products (gemm_avx2.c) */
bool el_attend_avx2(el_kernels *k);          /* its attention kernel (attend_avx2.c) */
bool el_swiglu_avx2(el_kernels *k);          /* its gated activation (swiglu_avx2.c) */
bool el_gemv_w4g_avx2(el_kernels *k);        /* its W4G64/128 gemvs (gemv_w4g_avx2.c) */
bool el_kernels_avx512(el_kernels *k);       /* AVX-512 F/BW/VL with VNNI */
/* These add to el_kernels_avx512 and are applied only after it has accepted the CPU. */
bool el_gemm_avx512(el_kernels *k);          /* its packed products (gemm_avx512.c) */
bool el_attend_avx512(el_kernels *k);        /* its attention kernel (attend_avx512.c) */
bool el_gemv_w4g_avx512(el_kernels *k);      /* its W4G gemvs (gemv_w4g_avx512.c) */
bool el_kernels_neon(el_kernels *k);         /* aarch64 Advanced SIMD (every aarch64 CPU) */
/* This adds to el_kernels_neon and is applied only after it has accepted the CPU. */
bool el_attend_neon(el_kernels *k);          /* its attention kernel (attend_neon.c) */
bool el_kernels_neon_dotprod(el_kernels *k); /* + the dot product instructions (SDOT) */
/* This adds to el_kernels_neon_dotprod and is applied only after it has accepted the CPU. */
bool el_gemm_neon(el_kernels *k);            /* its packed products (gemm_neon.c) */

#endif
