/* avx2.c - AVX2 dot products, one per weight type (GGUF's and edgelora's integer types of
 * edge.h), each the same sum as its reference (integer products inside blocks, scales applied
 * per block) but 32 bytes at a time; 4x4 tiles for q8_0, q4_0, q4_K, q6_K, w8 and w4 (prompt
 * processing); gemvs for q8_0, q4_0, w8 and w4 (decode); activation quantizers byte-exact with
 * the reference ones; and the table of every AVX2 kernel (el_level_avx2), with the packed
 * products (gemm_avx2.c), the attention kernel (attend_avx2.c) and the rest.
 * Built with -mavx2 -mfma -mf16c on x86 (see Makefile) and used only when the CPU has them. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/gemv_drive.h"
#include "kernels/w8a16.h"

static float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* Sums of adjacent pairs of x*y over signed bytes, as 8 int32 lanes of 4 products each.
 * maddubs wants an unsigned operand, so the sign of x moves onto y (exact for |y| <= 127,
 * which holds for activations quantized by el_*_from_float). */
static __m256i dot_i8(__m256i x, __m256i y) {
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

static float fp16(uint16_t h) { return _cvtsh_ss(h); }

static void vec_dot_f32(int64_t n, float *s, const void *x, const void *y) {
    const float *a = x, *b = y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) sum += a[i] * b[i];
    *s = sum;
}

static void vec_dot_f16(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i)));
        __m256 a1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i + 8)));
        acc0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b + i + 8), acc1);
    }
    float sum = hsum_ps(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) sum += fp16(a[i]) * b[i];
    *s = sum;
}

static void vec_dot_bf16(int64_t n, float *s, const void *x, const void *y) {
    const uint16_t *a = x;
    const float *b = y;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(a + i)));
        __m256 af = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)); /* bf16 is the top half */
        acc = _mm256_fmadd_ps(af, _mm256_loadu_ps(b + i), acc);
    }
    float sum = hsum_ps(acc);
    for (; i < n; i++) sum += el_bf16_to_fp32(a[i]) * b[i];
    *s = sum;
}

/* The integer dots of one block pair as 8 int32 lanes. */
static inline __m256i q8_0_dot(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    return dot_i8(_mm256_loadu_si256((const __m256i *)a->qs),
                  _mm256_loadu_si256((const __m256i *)b->qs));
}

/* Q4_0 nibbles stay unsigned (maddubs takes them as they are, pairs <= 2*15*128) and the 8 comes
 * off in int16: sum (u - 8) y = sum u y - sum 8 y. Elements 0-15 are the low nibbles, 16-31 the
 * high nibbles. */
static inline __m256i q4_0_dot(const el_block_q4_0 *a, const int8_t *y) {
    __m128i q = _mm_loadu_si128((const __m128i *)a->qs);
    __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    __m256i yq = _mm256_loadu_si256((const __m256i *)y);
    __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, yq),
                                 _mm256_maddubs_epi16(_mm256_set1_epi8(8), yq));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* The fp16 scales d of 8 consecutive blocks stride bytes apart (d first in each), as floats:
 * one conversion for 8 blocks instead of one each. */
static inline __m256 fp16x8(const void *blocks, size_t stride) {
    const char *p = blocks;
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, sizeof h[k]);
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3],
                                          (short)h[4], (short)h[5], (short)h[6], (short)h[7]));
}

/* Element k of v in all lanes. */
static inline __m256 lane(__m256 v, int k) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(k)); }

/* Groups of 8 blocks share one conversion of their 16 scales; two accumulators, so consecutive
 * fmadds do not wait on each other's latency. x is q4_0 (q4) or q8_0 blocks, y q8_0 blocks. */
static inline __attribute__((always_inline)) float dot_blocks32(int64_t nb, const void *x,
                                                                size_t x_block, const void *y,
                                                                bool q4) {
    const char *xa = x;
    const el_block_q8_0 *b = y;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m256 d = _mm256_mul_ps(fp16x8(xa + i * x_block, x_block), fp16x8(b + i, sizeof *b));
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const void *xb = xa + (i + k) * x_block;
            __m256i p = q4 ? q4_0_dot(xb, b[i + k].qs) : q8_0_dot(xb, b + i + k);
            acc[k & 1] = _mm256_fmadd_ps(lane(d, k), _mm256_cvtepi32_ps(p), acc[k & 1]);
        }
    }
    for (; i < nb; i++) {
        const void *xb = xa + i * x_block;
        uint16_t dx;
        memcpy(&dx, xb, sizeof dx);
        __m256i p = q4 ? q4_0_dot(xb, b[i].qs) : q8_0_dot(xb, b + i);
        acc[0] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[i].d)), _mm256_cvtepi32_ps(p), acc[0]);
    }
    return hsum_ps(_mm256_add_ps(acc[0], acc[1]));
}

static void vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK8_0, x, sizeof(el_block_q8_0), y, false);
}

static void vec_dot_q4_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK4_0, x, sizeof(el_block_q4_0), y, true);
}

/* Picks int16 element e of each 128-bit lane into every int16 of that lane. */
static inline __m256i pick_i16(__m256i v, int e) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)(0x0100 * (2 * e + 1) + 2 * e)));
}

/* The block's scales and mins are unpacked all at once (el_q4_k_scales_mins); the mins' term
 * sum_s m[s] * (bsums[2s] + bsums[2s+1]) is one madd of the bsums with the mins duplicated;
 * both terms accumulate in float vectors, reduced once at the end. */
static void vec_dot_q4_k(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q4_k *a = x;
    const el_block_q8_k *b = y;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        uint32_t w[4];
        el_q4_k_scales_mins(a[i].scales, w);
        __m128i sm = _mm_setr_epi32((int)w[0], (int)w[1], (int)w[2], (int)w[3]); /* sc, m */
        __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm)); /* sc[0..7] per lane */
        __m256i mins = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)b[i].bsums),
                                         _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)));
        __m256i sum = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int c = 0; c < 4; c++) { /* 32 bytes: sub-blocks 2c (low nibbles), 2c+1 (high) */
            __m256i q = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            __m256i y0 = _mm256_loadu_si256((const __m256i *)(b[i].qs + 64 * c));
            __m256i y1 = _mm256_loadu_si256((const __m256i *)(b[i].qs + 64 * c + 32));
            /* nibbles are unsigned: maddubs directly; pairs <= 2*15*128 */
            __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y0), pick_i16(sc, 2 * c));
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y1), pick_i16(sc, 2 * c + 1));
            sum = _mm256_add_epi32(sum, _mm256_add_epi32(p0, p1));
        }
        __m256 d = _mm256_set1_ps(fp16(a[i].d) * b[i].d);
        __m256 dmin = _mm256_set1_ps(fp16(a[i].dmin) * b[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sum), acc);
        acc = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(mins), acc);
    }
    *s = hsum_ps(acc);
}

/* q - 32 is split as q*y - 32*y; the sums of y per sub-block of 16 are the Q8_K bsums, so the
 * offset term is one madd of the bsums with the 16 scales. Per quarter the two sub-blocks'
 * scales go to the two 128-bit lanes by a shuffle of the widened scales. */
static void vec_dot_q6_k(int64_t n, float *s, const void *x, const void *y) {
    const el_block_q6_k *a = x;
    const el_block_q8_k *b = y;
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a[i].scales));
        __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)b[i].bsums));
        __m256i sum = _mm256_setzero_si256();
        #pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            /* scales 8h..8h+7 in both lanes */
            __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
                            : _mm256_permute2x128_si256(sc16, sc16, 0x00);
            const uint8_t *ql = a[i].ql + 64 * h;
            __m256i qh = _mm256_loadu_si256((const __m256i *)(a[i].qh + 32 * h));
            __m256i ql0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i ql1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            #pragma GCC unroll 4
            for (int quarter = 0; quarter < 4; quarter++) {
                __m256i lo = quarter & 1 ? ql1 : ql0;
                if (quarter >> 1) lo = _mm256_srli_epi16(lo, 4);
                lo = _mm256_and_si256(lo, low4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * quarter), low2);
                __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)); /* 0..63 */
                __m256i yq = _mm256_loadu_si256((const __m256i *)(b[i].qs + 128 * h + 32 * quarter));
                /* low lane: scale 2*quarter, high lane: 2*quarter + 1 */
                __m256i scv = _mm256_blend_epi32(pick_i16(sch, 2 * quarter),
                                                  pick_i16(sch, 2 * quarter + 1), 0xF0);
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(q, yq), scv));
            }
        }
        sum = _mm256_sub_epi32(sum, _mm256_slli_epi32(off, 5)); /* - 32 * sum sc * bsums */
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16(a[i].d) * b[i].d), _mm256_cvtepi32_ps(sum), acc);
    }
    *s = hsum_ps(acc);
}

/* Folds the 8 int32 lanes of four dots into [d0 d1 d2 d3 | d0 d1 d2 d3], each half a partial
 * sum (two rounds of hadd). */
static inline __m256i fold4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/* Stores the four sums of acc's two halves to y[0..3]. */
static inline void store_fold(float *y, __m256 acc) {
    _mm_storeu_ps(y, _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)));
}

/* The EL_TILE x EL_TILE tiles (prompt processing). Per block the four weight rows are unpacked
 * once; for each activation row the four dots are folded into one vector (fold4), scaled by
 * the four weight scales times the activation's and accumulated in acc[r], whose halves add up
 * to y[r][0..3]. The loops over the tile are unrolled so that its arrays live in registers
 * (-O2 would keep them in memory). */
static void tile_q8_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK8_0; i++) {
        __m256i wq[EL_TILE], wabs[EL_TILE];
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q8_0 *b = (const el_block_q8_0 *)((const char *)w + o * w_stride) + i;
            wq[o] = _mm256_loadu_si256((const __m256i *)b->qs);
            wabs[o] = _mm256_sign_epi8(wq[o], wq[o]); /* for dot_i8's sign trick, once */
            wd[o] = b->d;
        }
        __m128 dw4 = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                                 (short)wd[3], 0, 0, 0, 0));
        __m256 dw = _mm256_set_m128(dw4, dw4);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_madd_epi16(
                    _mm256_maddubs_epi16(wabs[o], _mm256_sign_epi8(yq, wq[o])), ones);
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fold4(p[0], p[1], p[2], p[3])), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* Q4_0 quants stay unsigned (q in 0..15, maddubs takes them as they are) and the offset comes
 * off once per activation row: sum (q - 8) y = sum q y - 8 sum y. */
static void tile_q4_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK4_0; i++) {
        __m256i wq[EL_TILE];
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q4_0 *b = (const el_block_q4_0 *)((const char *)w + o * w_stride) + i;
            __m128i q = _mm_loadu_si128((const __m128i *)b->qs);
            wq[o] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
            wd[o] = b->d;
        }
        __m128 dw4 = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                                 (short)wd[3], 0, 0, 0, 0));
        __m256 dw = _mm256_set_m128(dw4, dw4);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_madd_epi16(_mm256_maddubs_epi16(wq[o], yq), ones);
            __m256i off = _mm256_madd_epi16(_mm256_maddubs_epi16(eight, yq), ones);
            __m256i dots = _mm256_sub_epi32(fold4(p[0], p[1], p[2], p[3]), fold4(off, off, off, off));
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* For the K-quant tiles: the integer sums of four weight rows' 256 unsigned quant bytes (as 8
 * chunks of 32, w[o][c]) against one Q8_K row, each pair product weighted by its chunk's scale
 * (scale[o][c], int16 lanes); sum[o] gets 8 int32 partial sums for row o. */
static inline __attribute__((always_inline)) void tile_k_sums(const el_block_q8_k *ab,
                                                              const __m256i w[EL_TILE][8],
                                                              const __m256i scale[EL_TILE][8],
                                                              __m256i sum[EL_TILE]) {
    #pragma GCC unroll 4
    for (int o = 0; o < EL_TILE; o++) sum[o] = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int c = 0; c < 8; c++) {
        __m256i yq = _mm256_loadu_si256((const __m256i *)(ab->qs + 32 * c));
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++)
            sum[o] = _mm256_add_epi32(sum[o], _mm256_madd_epi16(
                _mm256_maddubs_epi16(w[o][c], yq), scale[o][c]));
    }
}

/* The 4x4 tile of Q4_K weights against Q8_K activations. Per block, the four weight rows are
 * unpacked once into small buffers (nibbles as bytes; each sub-block's scale widened to int16
 * lanes, ready for madd; mins duplicated per pair of bsums); then for each activation row
 * the 4 x 8 sub-block dots reuse them, folded per row into [o0..o3 | o0..o3] (fold4). */
static void tile_q4_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        __m256i nib[EL_TILE][8];   /* [o][sub-block]: the 32 nibbles as bytes */
        __m256i scale[EL_TILE][8]; /* [o][sub-block]: its scale in every int16 lane */
        __m256i mdup[EL_TILE];     /* mins, each twice: pairs with the 16 bsums */
        float dw[EL_TILE], dminw[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q4_k *b = (const el_block_q4_k *)((const char *)w + o * w_stride) + i;
            uint32_t words[4];
            el_q4_k_scales_mins(b->scales, words);
            __m128i sm = _mm_setr_epi32((int)words[0], (int)words[1], (int)words[2], (int)words[3]);
            __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
            mdup[o] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
            #pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
                nib[o][2 * c] = _mm256_and_si256(q, low4);
                nib[o][2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
                scale[o][2 * c] = pick_i16(sc, 2 * c);
                scale[o][2 * c + 1] = pick_i16(sc, 2 * c + 1);
            }
            dw[o] = fp16(b->d);
            dminw[o] = fp16(b->dmin);
        }
        __m128 dw4 = _mm_setr_ps(dw[0], dw[1], dw[2], dw[3]);
        __m128 dminw4 = _mm_setr_ps(dminw[0], dminw[1], dminw[2], dminw[3]);
        __m256 dwv = _mm256_set_m128(dw4, dw4), dminv = _mm256_set_m128(dminw4, dminw4);
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            __m256i sum[EL_TILE];
            tile_k_sums(ab, nib, scale, sum);
            __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);
            __m256i mins = fold4(_mm256_madd_epi16(bs, mdup[0]), _mm256_madd_epi16(bs, mdup[1]),
                                 _mm256_madd_epi16(bs, mdup[2]), _mm256_madd_epi16(bs, mdup[3]));
            __m256 da = _mm256_set1_ps(ab->d);
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dwv, da),
                                     _mm256_cvtepi32_ps(fold4(sum[0], sum[1], sum[2], sum[3])), acc[r]);
            acc[r] = _mm256_fnmadd_ps(_mm256_mul_ps(dminv, da), _mm256_cvtepi32_ps(mins), acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* The 4x4 tile of Q6_K weights against Q8_K activations, like tile_q4_k: per block the four
 * weight rows' 6-bit quants are unpacked once into bytes (0..63, unsigned for maddubs: pairs
 * <= 2*63*128 fit int16) with, per 32 elements, the two sub-blocks' scales in the two 128-bit
 * lanes; the - 32 offset is 32 * sum_s scale[s] * bsums[s], one madd per row pair. */
static void tile_q6_k(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(3);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EL_QK_K; i++) {
        __m256i q6[EL_TILE][8];    /* [o][32-element chunk]: quants 0..63 as bytes */
        __m256i scale[EL_TILE][8]; /* [o][chunk]: its two sub-blocks' scales, one per lane */
        __m256i sc16[EL_TILE];     /* the 16 scales as int16, for the offset term */
        float dw[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const el_block_q6_k *b = (const el_block_q6_k *)((const char *)w + o * w_stride) + i;
            sc16[o] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
            #pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256i sch = h ? _mm256_permute2x128_si256(sc16[o], sc16[o], 0x11)
                                : _mm256_permute2x128_si256(sc16[o], sc16[o], 0x00);
                __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
                __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
                __m256i ql1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
                #pragma GCC unroll 4
                for (int quarter = 0; quarter < 4; quarter++) {
                    __m256i lo = quarter & 1 ? ql1 : ql0;
                    if (quarter >> 1) lo = _mm256_srli_epi16(lo, 4);
                    lo = _mm256_and_si256(lo, low4);
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * quarter), low2);
                    q6[o][4 * h + quarter] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                    scale[o][4 * h + quarter] = _mm256_blend_epi32(
                        pick_i16(sch, 2 * quarter), pick_i16(sch, 2 * quarter + 1), 0xF0);
                }
            }
            dw[o] = fp16(b->d);
        }
        __m128 dw4 = _mm_setr_ps(dw[0], dw[1], dw[2], dw[3]);
        __m256 dwv = _mm256_set_m128(dw4, dw4);
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_k *ab = (const el_block_q8_k *)((const char *)a + r * a_stride) + i;
            __m256i sum[EL_TILE];
            tile_k_sums(ab, q6, scale, sum);
            __m256i bs = _mm256_loadu_si256((const __m256i *)ab->bsums);
            __m256i off = fold4(_mm256_madd_epi16(sc16[0], bs), _mm256_madd_epi16(sc16[1], bs),
                                _mm256_madd_epi16(sc16[2], bs), _mm256_madd_epi16(sc16[3], bs));
            __m256i dots = _mm256_sub_epi32(fold4(sum[0], sum[1], sum[2], sum[3]),
                                            _mm256_slli_epi32(off, 5));
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dwv, _mm256_set1_ps(ab->d)),
                                     _mm256_cvtepi32_ps(dots), acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) store_fold(y + r * ldy, acc[r]);
}

/* max |x[i]| over n (a multiple of 8); NaN elements are passed over, as the reference's fmaxf
 * does (maxps returns its second operand when the first is NaN). */
static float absmax(const float *x, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8)
        m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* 32 floats times id rounded to the nearest integer (cvtps rounds per MXCSR: to nearest even
 * by default, like lrintf), narrowed to bytes in order, -128 clamped to -127 like the
 * reference. Also returns the four groups' 8-lane int32 values for the Q8_K sums. */
static __m256i round_to_s8(const float *x, float id, __m256i q[4]) {
    const __m256 vid = _mm256_set1_ps(id);
    for (int k = 0; k < 4; k++) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid));
    /* the packs work within 128-bit lanes; the permute puts the 4-byte groups back in order */
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    return _mm256_max_epi8(b, _mm256_set1_epi8(-127));
}

/* The same arithmetic as el_q8_0_from_float (d = amax / 127, q = round(x * (1 / d))), so the
 * same bytes; F16C's conversion rounds to nearest even like el_fp32_to_fp16. */
static void quantize_q8_0(const float *x, void *y, int64_t n) {
    el_block_q8_0 *b = y;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        float d = absmax(x, EL_QK8_0) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        __m256i q[4];
        _mm256_storeu_si256((__m256i *)b->qs, round_to_s8(x, id, q));
    }
}

/* Float32 to fp16 by F16C, rounding to nearest even like el_fp32_to_fp16 (which also quiets a
 * NaN the same way): the rows the KV cache stores. */
static void quantize_f16(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) h[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

static void quantize_q8_k(const float *x, void *y, int64_t n) {
    el_block_q8_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        float d = absmax(x, EL_QK_K) / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b->d = d;
        for (int g = 0; g < EL_QK_K / 32; g++) {
            __m256i q[4];
            _mm256_storeu_si256((__m256i *)(b->qs + 32 * g), round_to_s8(x + 32 * g, id, q));
            /* clamping only ever moves -128 to -127, which cannot come out of x * id */
            b->bsums[2 * g] = (int16_t)hsum_epi32(_mm256_add_epi32(q[0], q[1]));
            b->bsums[2 * g + 1] = (int16_t)hsum_epi32(_mm256_add_epi32(q[2], q[3]));
        }
    }
}

/* ---- edgelora's integer types (edge.h): sums stay in int32 lanes over a row or group */

/* W8 . A8: one integer dot over the row, then one float multiply. */
static void vec_dot_w8(int64_t n, float *s, const void *x, const void *y) {
    const int8_t *q = (const int8_t *)x + sizeof(float), *a = (const int8_t *)y + sizeof(el_a8_header);
    __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm256_add_epi32(acc0, dot_i8(_mm256_loadu_si256((const __m256i *)(q + i)),
                                             _mm256_loadu_si256((const __m256i *)(a + i))));
        acc1 = _mm256_add_epi32(acc1, dot_i8(_mm256_loadu_si256((const __m256i *)(q + i + 32)),
                                             _mm256_loadu_si256((const __m256i *)(a + i + 32))));
    }
    for (; i < n; i += 32)
        acc0 = _mm256_add_epi32(acc0, dot_i8(_mm256_loadu_si256((const __m256i *)(q + i)),
                                             _mm256_loadu_si256((const __m256i *)(a + i))));
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    *s = el_edge_row_scale(x) * h.d * (float)hsum_epi32(_mm256_add_epi32(acc0, acc1));
}

/* The sum of the 8 int32 lanes of v, in int64 (lanes may sum past 2^31). */
static inline int64_t hsum_epi32_wide(__m256i v) {
    __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

/* 16 int8 weights widened to int16. */
static inline __m256i widen16(const int8_t *q) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q));
}

/* EL_TILE W8 rows against EL_TILE A16 rows, two activation rows at a time (16 registers do not
 * hold all 16 sums). */
static void tile_w8a16(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                       const void *a, size_t a_stride) {
    const int8_t *q[EL_TILE];
    int64_t sum[EL_TILE][EL_TILE] = {{0}};
    for (int o = 0; o < EL_TILE; o++)
        q[o] = (const int8_t *)((const char *)w + o * w_stride) + sizeof(float);
    for (int r0 = 0; r0 < EL_TILE; r0 += 2) {
        const char *v[2] = {el_a16_view_of((const char *)a + r0 * a_stride, n).q,
                            el_a16_view_of((const char *)a + (r0 + 1) * a_stride, n).q};
        for (int64_t i = 0; i < n;) {
            int64_t end = el_a16_run_end(i, n);
            __m256i acc[2][EL_TILE];
            #pragma GCC unroll 2
            for (int r = 0; r < 2; r++)
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) acc[r][o] = _mm256_setzero_si256();
            for (; i < end; i += 16) {
                __m256i wq[EL_TILE];
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) wq[o] = widen16(q[o] + i);
                #pragma GCC unroll 2
                for (int r = 0; r < 2; r++) {
                    __m256i av = _mm256_loadu_si256((const __m256i *)(v[r] + 2 * i));
                    #pragma GCC unroll 4
                    for (int o = 0; o < EL_TILE; o++)
                        acc[r][o] = _mm256_add_epi32(acc[r][o], _mm256_madd_epi16(wq[o], av));
                }
            }
            #pragma GCC unroll 2
            for (int r = 0; r < 2; r++)
                #pragma GCC unroll 4
                for (int o = 0; o < EL_TILE; o++) sum[r0 + r][o] += hsum_epi32_wide(acc[r][o]);
        }
    }
    el_w8a16_tile_store(sum, y, ldy, w, w_stride, a, a_stride);
}

/* The 32 unsigned nibbles (0..15) of an int4 chunk, in element order. */
static inline __m256i load_chunk_u4(const uint8_t *qs) {
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

/* W4 . A8: nibbles stay unsigned (maddubs takes them as they are) and the 8 comes off once:
 * sum (u - 8) a = sum u a - 8 * (the A8 row's sum). */
static void vec_dot_w4(int64_t n, float *s, const void *x, const void *y) {
    const uint8_t *qs = (const uint8_t *)x + sizeof(float);
    const int8_t *a = (const int8_t *)y + sizeof(el_a8_header);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) { /* two chunks' pair sums add up within int16 (<= 2*3810) */
        __m256i p = _mm256_add_epi16(
            _mm256_maddubs_epi16(load_chunk_u4(qs + i / 2), _mm256_loadu_si256((const __m256i *)(a + i))),
            _mm256_maddubs_epi16(load_chunk_u4(qs + i / 2 + 16),
                                 _mm256_loadu_si256((const __m256i *)(a + i + 32))));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
    }
    for (; i < n; i += 32) {
        __m256i p = _mm256_maddubs_epi16(load_chunk_u4(qs + i / 2),
                                         _mm256_loadu_si256((const __m256i *)(a + i)));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
    }
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    *s = el_edge_row_scale(x) * h.d * (float)(hsum_epi32(acc) - 8 * h.sum);
}

/* W4G<g> . A8: per chunk sum u a - sum 8 a, both in int16 pairs (3810 and 2032 at most); per
 * group one float multiply by the group's scale; the row's activation scale at the end. */
static inline __attribute__((always_inline)) void vec_dot_w4g(int64_t n, float *s, const void *x,
                                                              const void *y, int g) {
    const uint8_t *b = x;
    const int8_t *a = (const int8_t *)y + sizeof(el_a8_header);
    const __m256i ones = _mm256_set1_epi16(1), eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += g, b += 2 + g / 2) {
        __m256i gi = _mm256_setzero_si256();
        for (int c = 0; c < g / 32; c++) {
            __m256i av = _mm256_loadu_si256((const __m256i *)(a + i + 32 * c));
            __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(load_chunk_u4(b + 2 + 16 * c), av),
                                         _mm256_maddubs_epi16(eight, av));
            gi = _mm256_add_epi32(gi, _mm256_madd_epi16(p, ones));
        }
        uint16_t d;
        memcpy(&d, b, sizeof d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16(d)), _mm256_cvtepi32_ps(gi), acc);
    }
    el_a8_header h;
    memcpy(&h, y, sizeof h);
    *s = hsum_ps(acc) * h.d;
}

static void vec_dot_w4g32(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 32);
}
static void vec_dot_w4g64(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 64);
}
static void vec_dot_w4g128(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 128);
}

/* The 4x4 tile of W8 or W4 rows against A8 rows: integer sums over the whole row and one float
 * multiply per output at the end. Two weight rows at a time against the four activation rows
 * keep 8 int32 accumulators (and the weight chunks) in registers; each weight chunk is loaded
 * and unpacked once for four activation rows. W4 nibbles stay unsigned and 8 * (the A8 row's
 * sum) comes off at the end, as in vec_dot_w4. */
static inline __attribute__((always_inline)) void tile_wrow(int64_t n, float *y, int64_t ldy,
                                                            const void *w, size_t w_stride,
                                                            const void *a, size_t a_stride,
                                                            bool w4) {
    const __m256i ones = _mm256_set1_epi16(1);
    el_a8_header ah[EL_TILE];
    const int8_t *act[EL_TILE];
    for (int r = 0; r < EL_TILE; r++) {
        memcpy(&ah[r], (const char *)a + r * a_stride, sizeof ah[r]);
        act[r] = (const int8_t *)a + r * a_stride + sizeof ah[r];
    }
    for (int o0 = 0; o0 < EL_TILE; o0 += 2) {
        const char *row[2] = {(const char *)w + o0 * w_stride, (const char *)w + (o0 + 1) * w_stride};
        __m256i acc[2][EL_TILE];
        #pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) acc[k][r] = _mm256_setzero_si256();
        }
        for (int64_t i = 0; i < n; i += 32) {
            __m256i wv[2], wabs[2];
            #pragma GCC unroll 2
            for (int k = 0; k < 2; k++) {
                const char *q = row[k] + sizeof(float);
                if (w4) {
                    wv[k] = wabs[k] = load_chunk_u4((const uint8_t *)q + i / 2);
                } else {
                    wv[k] = _mm256_loadu_si256((const __m256i *)(q + i));
                    wabs[k] = _mm256_sign_epi8(wv[k], wv[k]);
                }
            }
            #pragma GCC unroll 4
            for (int r = 0; r < EL_TILE; r++) {
                __m256i yv = _mm256_loadu_si256((const __m256i *)(act[r] + i));
                #pragma GCC unroll 2
                for (int k = 0; k < 2; k++) {
                    __m256i p = _mm256_maddubs_epi16(wabs[k], w4 ? yv : _mm256_sign_epi8(yv, wv[k]));
                    acc[k][r] = _mm256_add_epi32(acc[k][r], _mm256_madd_epi16(p, ones));
                }
            }
        }
        for (int k = 0; k < 2; k++) {
            float dw = el_edge_row_scale(row[k]);
            for (int r = 0; r < EL_TILE; r++) {
                int32_t dot = hsum_epi32(acc[k][r]) - (w4 ? 8 * ah[r].sum : 0);
                y[r * ldy + o0 + k] = dw * ah[r].d * (float)dot;
            }
        }
    }
}

static void tile_w8(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                    const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, false);
}

static void tile_w4(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                    const void *a, size_t a_stride) {
    tile_wrow(n, y, ldy, w, w_stride, a, a_stride, true);
}

/* ---- gemv (decode): rows side by side as gemv_drive (gemv_drive.h) picks them, sharing each
 * activation load and what depends only on it; each row's arithmetic is the same in any
 * company, so results do not depend on how rows are split between threads. */

/* The dots of R rows (4, 2 or 1) of q8_0 blocks with A rows of q8_0 activations b[a] (1, or 2-3
 * for the multi-row gemv): per group of 8 blocks the 8 scales of each side are converted once,
 * then per block one fmadd per output (the outputs are the independent chains); the last nb % 8
 * blocks alike with scalar scales. The weight's sign moves onto the activations (dot_i8), its
 * absolute value taken once for all A. */
static inline __attribute__((always_inline)) void rows_b32(int64_t nb, const char *const x[],
                                                           float s[][4], int R, int A,
                                                           const el_block_q8_0 *const b[]) {
    const size_t x_block = sizeof(el_block_q8_0);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m256 d[EL_GEMV_MULTI_MAX][4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 dx = fp16x8(x[r] + i * x_block, x_block);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) d[a][r] = _mm256_mul_ps(dx, fp16x8(b[a] + i, sizeof *b[a]));
        }
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m256i yq[EL_GEMV_MULTI_MAX];
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) yq[a] = _mm256_loadu_si256((const __m256i *)b[a][i + k].qs);
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const el_block_q8_0 *xq = (const el_block_q8_0 *)(x[r] + (i + k) * x_block);
                __m256i xv = _mm256_loadu_si256((const __m256i *)xq->qs);
                __m256i ax = _mm256_sign_epi8(xv, xv);
                #pragma GCC unroll 3
                for (int a = 0; a < A; a++) {
                    __m256i p = _mm256_madd_epi16(
                        _mm256_maddubs_epi16(ax, _mm256_sign_epi8(yq[a], xv)), ones);
                    acc[a][r] = _mm256_fmadd_ps(lane(d[a][r], k), _mm256_cvtepi32_ps(p), acc[a][r]);
                }
            }
        }
    }
    for (; i < nb; i++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *xb = x[r] + i * x_block;
            uint16_t dx;
            memcpy(&dx, xb, sizeof dx);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                __m256i p = q8_0_dot((const el_block_q8_0 *)xb, b[a] + i);
                acc[a][r] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[a][i].d)),
                                            _mm256_cvtepi32_ps(p), acc[a][r]);
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) s[a][r] = hsum_ps(acc[a][r]);
}

/* What the rows of a gemv share: its activation row and length. */
typedef struct gemv_act {
    const void *a;
    int64_t n;
} gemv_act;

/* The activation rows of a multi-row gemv. */
typedef struct gemv_acts {
    const void *a[EL_GEMV_MULTI_MAX];
    int64_t n;
} gemv_acts;

static inline __attribute__((always_inline)) void rows_q8_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    const gemv_act *ga = ctx;
    const el_block_q8_0 *b[1] = {ga->a};
    float t[1][4];
    rows_b32(ga->n / EL_QK8_0, row, t, R, 1, b);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_q8_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    const gemv_acts *ga = ctx;
    const el_block_q8_0 *b[EL_GEMV_MULTI_MAX] = {ga->a[0], ga->a[1], ga->a[2]};
    float t[EL_GEMV_MULTI_MAX][4];
    rows_b32(ga->n / EL_QK8_0, row, t, R, A, b);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

/* ---- q4_0 gemv: blocks in pairs, the low nibbles of both in one register and the high ones
 * in another (one 16-byte load each, the second inserted), against activations prepared per
 * slice to match; vpmaddubsw of both, less the prepared 8 * activations, and one vpmaddwd give
 * 4 int32 lanes per block. Eight blocks' lanes fold by two horizontal adds into one lane each,
 * so one conversion and one multiply-add by 8 scales serve them (the per-block conversion,
 * lane broadcast and multiply-add, with the scales' gathering, were half the work). */
enum { GEMV_SLICE = 16384 };

typedef struct q4_0_pair_prep {
    __m256i lo, hi; /* the activations against each block's low and high nibbles, two blocks */
    __m256i off;    /* int16 pair sums of 8 * those activations */
} q4_0_pair_prep;

/* A slice of the activations: q8_0 blocks b, or for w4g32 weights (q4_0's bytes, dotted with
 * int8 activations of one scale) an A8 row's quants a8 and scale a8_d. */
typedef struct q4_0_gemv_slice {
    const q4_0_pair_prep *p;
    const __m256 *d;        /* per 8 blocks: activation scales in the folded order */
    const el_block_q8_0 *b; /* the activation row as q8_0 blocks, or NULL and: */
    const int8_t *a8;       /* an A8 row's quants */
    float a8_d;             /* and its scale */
    int64_t first, octs, last; /* its first block, whole groups of 8, end block */
} q4_0_gemv_slice;

/* The 32 activation quants of block k, and their scale. */
static inline const int8_t *slice_qs(const q4_0_gemv_slice *sl, int64_t k) {
    return sl->b ? sl->b[k].qs : sl->a8 + k * EL_QK4_0;
}
static inline float slice_d(const q4_0_gemv_slice *sl, int64_t k) {
    return sl->b ? fp16(sl->b[k].d) : sl->a8_d;
}

/* Folded lane l of 8 blocks holds block fold_block[l]. */
static const int fold_block[8] = {0, 2, 4, 6, 1, 3, 5, 7};

static void prepare_q4_0_pairs(const q4_0_gemv_slice *sl, q4_0_pair_prep *p, __m256 *d) {
    const __m256i eight = _mm256_set1_epi8(8);
    for (int64_t j = 0; j < 4 * sl->octs; j++) {
        const int8_t *c0 = slice_qs(sl, sl->first + 2 * j);
        const int8_t *c1 = slice_qs(sl, sl->first + 2 * j + 1);
        p[j].lo = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)c1),
                                   _mm_loadu_si128((const __m128i *)c0));
        p[j].hi = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(c1 + 16)),
                                   _mm_loadu_si128((const __m128i *)(c0 + 16)));
        p[j].off = _mm256_add_epi16(_mm256_maddubs_epi16(eight, p[j].lo),
                                    _mm256_maddubs_epi16(eight, p[j].hi));
    }
    for (int64_t o = 0; o < sl->octs; o++) {
        float h[8];
        for (int l = 0; l < 8; l++) h[l] = slice_d(sl, sl->first + 8 * o + fold_block[l]);
        d[o] = _mm256_loadu_ps(h);
    }
}

/* A block pair of a row unpacked: both blocks' low nibbles in lo, high ones in hi. */
typedef struct pair_nibbles {
    __m256i lo, hi;
} pair_nibbles;

static inline pair_nibbles unpack_pair(const char *xb) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m128i q0 = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)xb)->qs);
    __m128i q1 = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)xb + 1)->qs);
    __m256i q = _mm256_set_m128i(q1, q0);
    return (pair_nibbles){_mm256_and_si256(q, low4),
                          _mm256_and_si256(_mm256_srli_epi16(q, 4), low4)};
}

/* The int32 lanes of an unpacked pair against prepared activations (4 per block: the pair's
 * first block in the low 128 bits). */
static inline __m256i pair_dot(pair_nibbles u, const q4_0_pair_prep *p) {
    __m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, p->lo),
                                 _mm256_maddubs_epi16(u.hi, p->hi));
    return _mm256_madd_epi16(_mm256_sub_epi16(t, p->off), _mm256_set1_epi16(1));
}

/* The weight scales of 8 blocks in the folded order. */
static inline __m256 fold_scales(const char *xb) {
    const el_block_q4_0 *x = (const el_block_q4_0 *)xb;
    return _mm256_cvtph_ps(_mm_setr_epi16((short)x[0].d, (short)x[2].d, (short)x[4].d,
                                          (short)x[6].d, (short)x[1].d, (short)x[3].d,
                                          (short)x[5].d, (short)x[7].d));
}

/* The dots of R weight rows with A activation rows (sl[a] the slice of row a): the one-row gemv
 * is A = 1 (R <= 4), the multi-row one A = 2 or 3 (R <= 2); each weight pair is unpacked once
 * for all A, and each output has the same arithmetic in any company. */
static inline __attribute__((always_inline)) void rows_q4_0_all(const q4_0_gemv_slice *sl,
                                                                const char *const row[],
                                                                float s[][4], int R, int A) {
    const size_t xb = sizeof(el_block_q4_0);
    __m256 acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_ps();
    for (int64_t o = 0; o < sl[0].octs; o++) {
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const char *x = row[r] + (sl[0].first + 8 * o) * xb;
            __m256i f01[EL_GEMV_MULTI_MAX], f23[EL_GEMV_MULTI_MAX];
            pair_nibbles u0 = unpack_pair(x), u1 = unpack_pair(x + 2 * xb);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                const q4_0_pair_prep *p = sl[a].p + 4 * o;
                f01[a] = _mm256_hadd_epi32(pair_dot(u0, p), pair_dot(u1, p + 1));
            }
            pair_nibbles u2 = unpack_pair(x + 4 * xb), u3 = unpack_pair(x + 6 * xb);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                const q4_0_pair_prep *p = sl[a].p + 4 * o;
                f23[a] = _mm256_hadd_epi32(pair_dot(u2, p + 2), pair_dot(u3, p + 3));
            }
            __m256 dw = fold_scales(x);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++)
                acc[a][r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, sl[a].d[o]),
                                            _mm256_cvtepi32_ps(_mm256_hadd_epi32(f01[a], f23[a])),
                                            acc[a][r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) {
            for (int64_t k = sl[a].first + 8 * sl[a].octs; k < sl[a].last; k++) { /* the rest */
                const el_block_q4_0 *x = (const el_block_q4_0 *)row[r] + k;
                __m256i p = q4_0_dot(x, slice_qs(&sl[a], k));
                acc[a][r] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(x->d) * slice_d(&sl[a], k)),
                                            _mm256_cvtepi32_ps(p), acc[a][r]);
            }
            s[a][r] = hsum_ps(acc[a][r]);
        }
}

static inline __attribute__((always_inline)) void rows_q4_0(const void *ctx,
                                                            const char *const row[4], float s[4],
                                                            int R) {
    float t[1][4];
    rows_q4_0_all(ctx, row, t, R, 1);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_q4_0_multi(const void *ctx,
                                                                  const char *const row[2],
                                                                  float s[][2], int R, int A) {
    float t[EL_GEMV_MULTI_MAX][4];
    rows_q4_0_all(ctx, row, t, R, A);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

/* q4_0 rows against q8_0 activations b or an A8 row's quants a8 (scale a8_d). */
static void gemv_q4_0_act(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                          const el_block_q8_0 *b, const int8_t *a8, float a8_d) {
    q4_0_pair_prep p[GEMV_SLICE / 64];
    __m256 d[GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_gemv_slice sl = {p, d, b, a8, a8_d, k0 / EL_QK4_0, len / 256, (k0 + len) / EL_QK4_0};
        prepare_q4_0_pairs(&sl, p, d);
        size_t prepared = (size_t)sl.octs * (4 * sizeof *p + sizeof *d);
        int R = gemv_company((size_t)len / EL_QK4_0 * sizeof(el_block_q4_0), prepared);
        gemv_drive(n_rows, R, w, w_stride, y, k0 > 0, rows_q4_0, &sl);
    }
}

static void gemv_q4_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_q4_0_act(n, y, n_rows, w, w_stride, a, NULL, 0.0f);
}

/* n_act (2 or 3) activation rows a_stride bytes apart, q8_0 blocks or (a8) A8 rows: the
 * one-row gemv's slices for each (78 KB of stack), weight rows two at a time. */
static void gemv_q4_0_multi_act(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                                const void *w, size_t w_stride, const void *a, size_t a_stride,
                                bool a8) {
    q4_0_pair_prep p[EL_GEMV_MULTI_MAX][GEMV_SLICE / 64];
    __m256 d[EL_GEMV_MULTI_MAX][GEMV_SLICE / 256];
    for (int64_t k0 = 0; k0 < n; k0 += GEMV_SLICE) {
        int64_t len = n - k0 < GEMV_SLICE ? n - k0 : GEMV_SLICE;
        q4_0_gemv_slice sl[EL_GEMV_MULTI_MAX];
        for (int k = 0; k < n_act; k++) {
            const char *ak = (const char *)a + k * a_stride;
            el_a8_header h = {0};
            if (a8) memcpy(&h, ak, sizeof h);
            const el_block_q8_0 *b = a8 ? NULL : (const el_block_q8_0 *)ak;
            const int8_t *q = a8 ? (const int8_t *)ak + sizeof h : NULL;
            sl[k] = (q4_0_gemv_slice){p[k], d[k], b, q, h.d, k0 / EL_QK4_0, len / 256,
                                      (k0 + len) / EL_QK4_0};
            prepare_q4_0_pairs(&sl[k], p[k], d[k]);
        }
        gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, k0 > 0, rows_q4_0_multi, sl);
    }
}

static void gemv_q4_0_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, false);
}

static void gemv_q8_0(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                      const void *a) {
    gemv_act ga = {a, n};
    int R = gemv_company(w_stride, el_row_size(EL_TYPE_Q8_0, n));
    gemv_drive(n_rows, R, w, w_stride, y, false, rows_q8_0, &ga);
}

static void gemv_q8_0_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                            const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_q8_0_multi, &ga);
}

/* W4 and W8 rows against A8 rows, R weight rows (4, 2 or 1) and A activation rows (1, or 2-3
 * for the multi-row gemv) at a time: int32 sums over the row (exact, so the same however rows
 * are grouped), 32 elements per step, each weight chunk loaded and unpacked once for all A; W4
 * nibbles unsigned with 8 * (the row's activation sum) off at the end, W8 with dot_i8's sign
 * trick (the weight's absolute value taken once). */
static inline __attribute__((always_inline)) void rows_wrow(int64_t n, const char *const q[4],
                                                            int32_t dot[][4], int R, int A,
                                                            const int8_t *const act[],
                                                            bool w4) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) acc[a][r] = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i += 32) {
        __m256i yv[EL_GEMV_MULTI_MAX];
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) yv[a] = _mm256_loadu_si256((const __m256i *)(act[a] + i));
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i x = w4 ? load_chunk_u4((const uint8_t *)q[r] + i / 2)
                           : _mm256_loadu_si256((const __m256i *)(q[r] + i));
            __m256i ux = w4 ? x : _mm256_sign_epi8(x, x);
            #pragma GCC unroll 3
            for (int a = 0; a < A; a++) {
                __m256i y = w4 ? yv[a] : _mm256_sign_epi8(yv[a], x);
                acc[a][r] = _mm256_add_epi32(acc[a][r],
                                             _mm256_madd_epi16(_mm256_maddubs_epi16(ux, y), ones));
            }
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 3
        for (int a = 0; a < A; a++) dot[a][r] = hsum_epi32(acc[a][r]);
}

/* The dots of W4 (w4) or W8 rows with A A8 rows, scaled: the row's scale times the
 * activations'. */
static inline __attribute__((always_inline)) void rows_w(const void *const a8[], int64_t n,
                                                         const char *const row[], float s[][4],
                                                         int R, int A, bool w4) {
    el_a8_header h[EL_GEMV_MULTI_MAX];
    const int8_t *act[EL_GEMV_MULTI_MAX];
    for (int a = 0; a < A; a++) {
        memcpy(&h[a], a8[a], sizeof h[a]);
        act[a] = (const int8_t *)a8[a] + sizeof(el_a8_header);
    }
    const char *q[4];
    int32_t dot[EL_GEMV_MULTI_MAX][4];
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) q[r] = row[r] + sizeof(float);
    rows_wrow(n, q, dot, R, A, act, w4);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++)
        for (int a = 0; a < A; a++)
            s[a][r] = el_edge_row_scale(row[r]) * h[a].d *
                      (float)(dot[a][r] - (w4 ? 8 * h[a].sum : 0));
}

static inline __attribute__((always_inline)) void rows_w1(const void *ctx,
                                                          const char *const row[4], float s[4],
                                                          int R, bool w4) {
    const gemv_act *ga = ctx;
    const void *a8[1] = {ga->a};
    float t[1][4];
    rows_w(a8, ga->n, row, t, R, 1, w4);
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = t[0][r];
}

static inline __attribute__((always_inline)) void rows_w4(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_w1(ctx, row, s, R, true);
}

static inline __attribute__((always_inline)) void rows_w8(const void *ctx, const char *const row[4],
                                                          float s[4], int R) {
    rows_w1(ctx, row, s, R, false);
}

static inline __attribute__((always_inline)) void rows_wm(const void *ctx,
                                                          const char *const row[2], float s[][2],
                                                          int R, int A, bool w4) {
    const gemv_acts *ga = ctx;
    float t[EL_GEMV_MULTI_MAX][4];
    rows_w(ga->a, ga->n, row, t, R, A, w4);
    for (int a = 0; a < A; a++)
        for (int r = 0; r < R; r++) s[a][r] = t[a][r];
}

static inline __attribute__((always_inline)) void rows_w4_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_wm(ctx, row, s, R, A, true);
}

static inline __attribute__((always_inline)) void rows_w8_multi(const void *ctx,
                                                                const char *const row[2],
                                                                float s[][2], int R, int A) {
    rows_wm(ctx, row, s, R, A, false);
}

static void gemv_w4_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                          const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_w4_multi, &ga);
}

void el_gemv_w8_multi_avx2(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                           const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_acts ga = {{a, (const char *)a + a_stride, (const char *)a + 2 * a_stride}, n};
    gemv_multi_drive(n_rows, n_act, w, w_stride, y, ldy, false, rows_w8_multi, &ga);
}

/* Rows of an A8-activation type (rows: its kernel), R together, against the A8 row a. */
static inline __attribute__((always_inline)) void gemv_a8(int64_t n, float *y, int64_t n_rows,
                                                          const void *w, size_t w_stride,
                                                          const void *a, int R,
                                                          gemv_rows_fn rows) {
    gemv_act ga = {a, n};
    gemv_drive(n_rows, R, w, w_stride, y, false, rows, &ga);
}

static void gemv_w4(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    gemv_a8(n, y, n_rows, w, w_stride, a, gemv_company(w_stride, (size_t)n), rows_w4);
}

static void gemv_w8(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                    const void *a) {
    gemv_a8(n, y, n_rows, w, w_stride, a, gemv_company(w_stride, (size_t)n), rows_w8);
}

/* W4G32 rows have q4_0's bytes and value (d * (nibble - 8)); only the activations differ. */
static void gemv_w4g32(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    el_a8_header h;
    memcpy(&h, a, sizeof h);
    gemv_q4_0_act(n, y, n_rows, w, w_stride, NULL, (const int8_t *)a + sizeof h, h.d);
}

static void gemv_w4g32_multi(int64_t n, float *y, int64_t ldy, int n_act, int64_t n_rows,
                             const void *w, size_t w_stride, const void *a, size_t a_stride) {
    gemv_q4_0_multi_act(n, y, ldy, n_act, n_rows, w, w_stride, a, a_stride, true);
}

/* W8A16 rows against one A16 row: R rows far apart share each activation load; a row's sum is
 * exact, so the same in any company. */
static inline __attribute__((always_inline)) void rows_w8a16(const void *ctx,
                                                             const char *const row[4], float s[4],
                                                             int R) {
    const el_a16_view *a = ctx;
    const int8_t *q[4];
    int64_t sum[4] = {0, 0, 0, 0};
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) q[r] = (const int8_t *)row[r] + sizeof(float);
    for (int64_t i = 0; i < a->n;) {
        int64_t end = el_a16_run_end(i, a->n);
        __m256i acc[4];
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_si256();
        for (; i < end; i += 16) {
            __m256i av = _mm256_loadu_si256((const __m256i *)(a->q + 2 * i));
            #pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(widen16(q[r] + i), av));
        }
        #pragma GCC unroll 4
        for (int r = 0; r < R; r++) sum[r] += hsum_epi32_wide(acc[r]);
    }
    #pragma GCC unroll 4
    for (int r = 0; r < R; r++) s[r] = el_w8a16_scale(row[r], a->d, sum[r]);
}

/* W8 . A16: one row of rows_w8a16. */
static void vec_dot_w8a16(int64_t n, float *s, const void *x, const void *y) {
    el_a16_view a = el_a16_view_of(y, n);
    const char *const row[4] = {x};
    rows_w8a16(&a, row, s, 1);
}

static void gemv_w8a16(int64_t n, float *y, int64_t n_rows, const void *w, size_t w_stride,
                       const void *a) {
    el_a16_view v = el_a16_view_of(a, n);
    gemv_drive(n_rows, gemv_company(w_stride, (size_t)n * 2), w, w_stride, y, false, rows_w8a16,
               &v);
}

/* A8 row: the reference's arithmetic (d = amax / 127 over the row, q = round(x * (1 / d))), so
 * the same bytes and sum. */
static void quantize_a8(const float *x, void *y, int64_t n) {
    el_a8_header h = {.d = absmax(x, n) / 127.0f};
    float id = h.d > 0.0f ? 1.0f / h.d : 0.0f;
    int8_t *q = (int8_t *)y + sizeof h;
    __m256i sum = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i += 32) {
        __m256i qi[4];
        _mm256_storeu_si256((__m256i *)(q + i), round_to_s8(x + i, id, qi));
        sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]),
                                                     _mm256_add_epi32(qi[2], qi[3])));
    }
    h.sum = hsum_epi32(sum);
    memcpy(y, &h, sizeof h);
}

/* A16 row: the reference's arithmetic (d = amax / 32767 over the row; x * (1 / d) rounded to
 * nearest even by cvtps, clamped to -32767..32767), so the same bytes. */
static void quantize_a16(const float *x, void *y, int64_t n) {
    el_a16_header h = {.d = absmax(x, n) / 32767.0f};
    const __m256 id = _mm256_set1_ps(h.d > 0.0f ? 1.0f / h.d : 0.0f);
    const __m256i hi = _mm256_set1_epi32(32767), lo = _mm256_set1_epi32(-32767);
    char *q = (char *)y + sizeof h;
    for (int64_t i = 0; i < n; i += 16) {
        __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), id));
        __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), id));
        a = _mm256_max_epi32(_mm256_min_epi32(a, hi), lo);
        b = _mm256_max_epi32(_mm256_min_epi32(b, hi), lo);
        /* packs works per 128-bit lane: a0 b0 a1 b1 in quarters, put back in order */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(q + 2 * i), p);
    }
    memcpy(y, &h, sizeof h);
}

/* cpuid: leaf 1 ecx has FMA (bit 12), OSXSAVE (27), AVX (28), F16C (29); leaf 7 ebx has AVX2
 * (bit 5); and the OS must save the YMM registers (xgetbv(0) bits 1 and 2). */
static bool cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    const unsigned need = (1u << 12) | (1u << 27) | (1u << 28) | (1u << 29);
    if ((c & need) != need) return false;
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 5)) != 0;
}

/* Every kernel of AVX2, FMA and F16C; types not named keep the reference's. */
const el_kernel_level el_level_avx2 = {
    .name = "avx2",
    .supported = cpu_has_avx2,
    .kernels = {
        .isa = "avx2",
        .vec_dot = {[EL_TYPE_F32] = vec_dot_f32, [EL_TYPE_F16] = vec_dot_f16,
                    [EL_TYPE_BF16] = vec_dot_bf16, [EL_TYPE_Q8_0] = vec_dot_q8_0,
                    [EL_TYPE_Q4_0] = vec_dot_q4_0, [EL_TYPE_Q4_K] = vec_dot_q4_k,
                    [EL_TYPE_Q6_K] = vec_dot_q6_k, [EL_TYPE_W8] = vec_dot_w8,
                    [EL_TYPE_W8A16] = vec_dot_w8a16, [EL_TYPE_W4] = vec_dot_w4,
                    [EL_TYPE_W4G32] = vec_dot_w4g32, [EL_TYPE_W4G64] = vec_dot_w4g64,
                    [EL_TYPE_W4G128] = vec_dot_w4g128},
        .quantize = {[EL_TYPE_Q8_0] = quantize_q8_0, [EL_TYPE_Q8_K] = quantize_q8_k,
                     [EL_TYPE_F16] = quantize_f16, [EL_TYPE_A8] = quantize_a8,
                     [EL_TYPE_A16] = quantize_a16},
        .tile = {[EL_TYPE_Q8_0] = tile_q8_0, [EL_TYPE_Q4_0] = tile_q4_0,
                 [EL_TYPE_Q4_K] = tile_q4_k, [EL_TYPE_Q6_K] = tile_q6_k, [EL_TYPE_W8] = tile_w8,
                 [EL_TYPE_W8A16] = tile_w8a16, [EL_TYPE_W4] = tile_w4},
        .gemm = {[EL_TYPE_Q4_0] = el_gemm_avx2, [EL_TYPE_Q8_0] = el_gemm_avx2,
                 [EL_TYPE_W4] = el_gemm_avx2, [EL_TYPE_W8] = el_gemm_avx2,
                 [EL_TYPE_W4G32] = el_gemm_avx2, [EL_TYPE_W4G64] = el_gemm_avx2,
                 [EL_TYPE_W4G128] = el_gemm_avx2},
        .gemm_signed = false,
        .attend = el_attend_avx2,
        .swiglu = el_swiglu_avx2,
        .gemv = {[EL_TYPE_Q8_0] = gemv_q8_0, [EL_TYPE_Q4_0] = gemv_q4_0, [EL_TYPE_W8] = gemv_w8,
                 [EL_TYPE_W4] = gemv_w4, [EL_TYPE_W4G32] = gemv_w4g32,
                 [EL_TYPE_W4G64] = el_gemv_w4g64_avx2, [EL_TYPE_W4G128] = el_gemv_w4g128_avx2,
                 [EL_TYPE_W8A16] = gemv_w8a16},
        /* W4G64/128 and W8A16: none (row by row through their gemv) */
        .gemv_multi = {[EL_TYPE_Q8_0] = gemv_q8_0_multi, [EL_TYPE_Q4_0] = gemv_q4_0_multi,
                       [EL_TYPE_W8] = el_gemv_w8_multi_avx2, [EL_TYPE_W4] = gemv_w4_multi,
                       [EL_TYPE_W4G32] = gemv_w4g32_multi},
    },
};

#else

const el_kernel_level el_level_avx2 = {.name = "avx2"}; /* not built in */

#endif
