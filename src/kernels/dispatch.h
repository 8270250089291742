/* dispatch.h - the kernels in use, chosen once at start-up from the CPU's features.
 *
 * The type kernels table (types.h) holds the portable reference kernels; this table starts as
 * a copy of it and one ISA level's table (el_kernel_level, below: avx2.c, avx512.c, neon.c, ...),
 * composed on the levels it builds on, replaces the entries it does faster.
 * EL_FORCE_REFERENCE=1 in the environment keeps the reference kernels (to compare or to
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

/* A few-row gemv is a multi-row gemv for 2..EL_GEMV_FEW_MAX activation rows (concurrent
 * variants, speculative verification, a served batch): each weight block is unpacked once for
 * all of them, and each output has the bits the type's gemv gives it. Where a type has one,
 * el_matmul takes it for every product of 2..EL_GEMV_FEW_MAX rows. */
enum { EL_GEMV_FEW_MAX = 16 };

/* On a level with few_rows_by_multi (below), products of 4 to EL_GEMV_BY_MULTI_MAX rows of a
 * type with a multi-row gemv and no few-row gemv go through the multi-row gemv three rows at a
 * time; more rows take the packed gemm, which pays for transposing its panels from there on
 * (measured per type: docs/kernels.md). */
enum { EL_GEMV_BY_MULTI_MAX = 8 };

/* The probe of a level's int8 multiply-add peak (the compute floor `bench --rows` reports): runs
 * iters iterations of EL_PROBE_CHAINS independent accumulations (enough to cover the latency of
 * every core's dot instruction at its full issue rate) with the byte product the level's
 * integer kernels use, on bytes all equal to `one` (1, passed at run time so nothing folds),
 * and returns the sum of every accumulator lane. With one = 1 each multiply-add adds one, so the
 * result is iters * macs_per_iter (mod 2^32): the count it claims is the count it did. */
enum { EL_PROBE_CHAINS = 12 };
typedef uint32_t (*el_int8_probe_fn)(int64_t iters, int8_t one);
typedef struct el_int8_probe {
    el_int8_probe_fn run;      /* NULL: none (the reference kernels) */
    int32_t macs_per_iter;     /* multiply-adds an iteration does */
    int32_t macs_per_instr;    /* of them, per dot instruction (the docs' hand count uses it) */
    const char *instruction;   /* the instruction, as docs/bench.md names it */
} el_int8_probe;

/* A row of n activations (a multiple of the type's block) against a fixed scale d > 0 (a static
 * per-tensor scale of calibration or a profile), the same bytes as the reference
 * (el_a8_from_float_static, el_q8_0_from_float_static, ...). */
typedef void (*el_static_fn)(const float *x, void *y, int64_t n, float d);

typedef struct el_kernels {
    const char *isa;                          /* "reference", "avx2", "neon-dotprod", ... */
    el_vec_dot_fn vec_dot[EL_TYPE_COUNT];     /* by weight type; NULL where the type has none */
    el_from_float_fn quantize[EL_TYPE_COUNT]; /* by activation type, and EL_TYPE_F16 (the KV
                                               * cache's rows): same bytes as from_float */
    el_static_fn quantize_static[EL_TYPE_COUNT]; /* by activation type: rows of a static scale
                                               * (A8, Q8_0, Q8_1, Q8_K; NULL for the others) */
    el_tile_fn tile[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    el_gemm_fn gemm[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    int8_t gemm_min_rows[EL_TYPE_COUNT]; /* by weight type: rows from which its gemm is taken
                                          * where packing costs more than usual; 0: el_matmul's
                                          * own minimum */
    el_attend_fn attend;                      /* attention of one row and kv head */
    el_swiglu_fn swiglu, geglu;               /* the feed-forward's gated activations */
    el_gemv_fn gemv[EL_TYPE_COUNT];           /* by weight type; NULL where there is none */
    el_gemv_multi_fn gemv_multi[EL_TYPE_COUNT]; /* by weight type; NULL: gemv row by row */
    el_gemv_multi_fn gemv_few[EL_TYPE_COUNT];   /* by weight type; NULL: none (see above) */
    bool few_rows_by_multi; /* 4..EL_GEMV_BY_MULTI_MAX rows of a type with a multi-row gemv and
                             * no few-row gemv go through its multi-row gemv, three rows at a
                             * time over blocks of weights in L2 (el_matmul), not the gemm */
    bool gemm_signed;                         /* the gemm kernels take signed weights (gemm.h) */
    el_int8_probe int8_probe;                 /* the level's int8 peak probe */
} el_kernels;

/* The table in use; filled on first call (thread-safe), constant afterwards: the reference
 * kernels, then the best ISA level this CPU runs (up to EL_ISA_MAX) composed on top. */
const el_kernels *el_kernels_get(void);

/* Fills k with the reference kernels of the type kernels table (and no tiles, gemms or gemvs). */
void el_kernels_reference(el_kernels *k);

/* The ISA levels built in, in order of preference (the best last): name i ("avx2", "avx512",
 * "neon", "neon-dotprod", as EL_ISA_MAX takes them), NULL past the last. */
const char *el_kernels_level_name(size_t i);

/* Fills k with the table the dispatcher composes for level name (the reference kernels, the
 * levels it builds on, then its own), whatever the environment says; false, leaving k alone, if
 * that level is not built in or this CPU does not run it. So tests can check every table this
 * CPU runs, not only the one el_kernels_get picks. */
bool el_kernels_level(const char *name, el_kernels *k);

/* What one ISA level provides, entry by entry and type by type: each entry its kernel, or NULL
 * where it has none of its own. Composed on top of its base (the level it builds on, or the
 * reference kernels), its entries replace the base's and the rest are the base's, except by
 * one rule: a multi-row gemv must give each output the bits of the same table's one-row gemv,
 * so a level that gives a type's gemv also says that type's multi-row and few-row gemvs (its own,
 * its base's named where the bits provably agree, or NULL: none), and one without that type's gemv gives
 * none. The gemm kernels of one level all take weights the same way (gemm_signed). Defined by
 * the ISA files (<isa>.c) and composed by dispatch.c alone. */
typedef struct el_kernel_level {
    const char *name;                    /* for EL_ISA_MAX and el_kernels_level */
    const struct el_kernel_level *base;  /* the level it builds on, or NULL: the reference */
    bool (*supported)(void);             /* this CPU and OS run it; NULL: not built in */
    el_kernels kernels;                  /* its own entries; .isa names the composed table */
} el_kernel_level;

extern const el_kernel_level el_level_avx2;         /* AVX2, FMA and F16C */
extern const el_kernel_level el_level_avx512;       /* AVX-512 F/BW/VL with VNNI, on AVX2 */
extern const el_kernel_level el_level_neon;         /* aarch64 Advanced SIMD (every aarch64) */
extern const el_kernel_level el_level_neon_dotprod; /* + the dot product instructions, on NEON */

#endif
