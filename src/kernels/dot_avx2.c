/* dot_avx2.c - AVX2 dot products, one per weight type (GGUF's and edgelora's integer types of
 * edge.h), each the same sum as its reference (integer products inside blocks, scales applied
 * per block) but 32 bytes at a time; and the activation quantizers, byte-exact with the
 * reference ones. */
#include "kernels/avx2.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/avx2_simd.h"
#include "kernels/blocks.h"
#include "kernels/edge.h"
#include "kernels/float_avx2.h"
#include "kernels/w8a16.h"

/* The float types' dot products: float_avx2.h's sequence for one output, the bits the gemvs
 * and tiles give it. */
static inline __attribute__((always_inline)) void vec_dot_float(el_float_kind kind, int64_t n,
                                                                float *s, const void *x,
                                                                const void *y) {
    const float *a = y;
    float t[1][4];
    float_dots_avx2(kind, n, &x, 1, &a, 1, t);
    *s = t[0][0];
}

void el_vec_dot_f32_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_F32, n, s, x, y);
}

void el_vec_dot_f16_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_F16, n, s, x, y);
}

void el_vec_dot_bf16_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_float(EL_FLOAT_BF16, n, s, x, y);
}

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

void el_vec_dot_q8_0_avx2(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK8_0, x, sizeof(el_block_q8_0), y, false);
}

void el_vec_dot_q4_0_avx2(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK4_0, x, sizeof(el_block_q4_0), y, true);
}

/* The block's scales and mins are unpacked all at once (el_q4_k_scales_mins); the mins' term
 * sum_s m[s] * (bsums[2s] + bsums[2s+1]) is one madd of the bsums with the mins duplicated;
 * both terms accumulate in float vectors, reduced once at the end. */
void el_vec_dot_q4_k_avx2(int64_t n, float *s, const void *x, const void *y) {
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
void el_vec_dot_q6_k_avx2(int64_t n, float *s, const void *x, const void *y) {
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
void el_quantize_q8_0_avx2(const float *x, void *y, int64_t n) {
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
void el_quantize_f16_avx2(const float *x, void *y, int64_t n) {
    uint16_t *h = y;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) h[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

void el_quantize_q8_k_avx2(const float *x, void *y, int64_t n) {
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
void el_vec_dot_w8_avx2(int64_t n, float *s, const void *x, const void *y) {
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

/* W4 . A8: nibbles stay unsigned (maddubs takes them as they are) and the 8 comes off once:
 * sum (u - 8) a = sum u a - 8 * (the A8 row's sum). */
void el_vec_dot_w4_avx2(int64_t n, float *s, const void *x, const void *y) {
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

void el_vec_dot_w4g32_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 32);
}
void el_vec_dot_w4g64_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 64);
}
void el_vec_dot_w4g128_avx2(int64_t n, float *s, const void *x, const void *y) {
    vec_dot_w4g(n, s, x, y, 128);
}

/* W8 . A16: one row of rows_w8a16. */
void el_vec_dot_w8a16_avx2(int64_t n, float *s, const void *x, const void *y) {
    el_a16_view a = el_a16_view_of(y, n);
    const char *const row[4] = {x};
    rows_w8a16(&a, row, s, 1);
}

/* A8 row: the reference's arithmetic (d = amax / 127 over the row, q = round(x * (1 / d))), so
 * the same bytes and sum. */
void el_quantize_a8_avx2(const float *x, void *y, int64_t n) {
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

/* 32 values on a fixed grid (1 / id per step): the reference's arithmetic (x * id clamped to
 * -127..127, a NaN to -127 as maxps returns its second operand, then rounded to nearest even by
 * cvtps), so the same bytes; q gets the four groups' 8-lane int32 values for the sums. */
static __m256i static_to_s8(const float *x, __m256 id, __m256i q[4]) {
    const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
    for (int k = 0; k < 4; k++) {
        __m256 v = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), id), lo);
        q[k] = _mm256_cvtps_epi32(_mm256_min_ps(v, hi));
    }
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static __m256 static_inverse(float step) { return _mm256_set1_ps(step > 0.0f ? 1.0f / step : 0.0f); }

static __m256i sum_groups(const __m256i q[4]) {
    return _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
}

/* A8 row of a fixed scale d: the bytes and sum of el_a8_from_float_static. */
void el_quantize_a8_static_avx2(const float *x, void *y, int64_t n, float d) {
    el_a8_header h = {.d = d};
    const __m256 id = static_inverse(d);
    int8_t *q = (int8_t *)y + sizeof h;
    __m256i sum = _mm256_setzero_si256();
    for (int64_t i = 0; i < n; i += 32) {
        __m256i qi[4];
        _mm256_storeu_si256((__m256i *)(q + i), static_to_s8(x + i, id, qi));
        sum = _mm256_add_epi32(sum, sum_groups(qi));
    }
    h.sum = hsum_epi32(sum);
    memcpy(y, &h, sizeof h);
}

/* Blocks of a fixed scale: the bytes of el_q8_0/q8_1/q8_k_from_float_static (the f16 blocks
 * on the grid of d's f16 value, el_static_step). */
void el_quantize_q8_0_static_avx2(const float *x, void *y, int64_t n, float d) {
    el_block_q8_0 *b = y;
    uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    const __m256 id = static_inverse(el_static_step(EL_TYPE_Q8_0, d));
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        __m256i q[4];
        b->d = dh;
        _mm256_storeu_si256((__m256i *)b->qs, static_to_s8(x, id, q));
    }
}

void el_quantize_q8_1_static_avx2(const float *x, void *y, int64_t n, float d) {
    el_block_q8_1 *b = y;
    uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    float step = el_static_step(EL_TYPE_Q8_1, d);
    const __m256 id = static_inverse(step);
    for (int64_t i = 0; i < n / EL_QK8_0; i++, b++, x += EL_QK8_0) {
        __m256i q[4];
        b->d = dh;
        _mm256_storeu_si256((__m256i *)b->qs, static_to_s8(x, id, q));
        b->s = _cvtss_sh((float)hsum_epi32(sum_groups(q)) * step, _MM_FROUND_TO_NEAREST_INT);
    }
}

void el_quantize_q8_k_static_avx2(const float *x, void *y, int64_t n, float d) {
    el_block_q8_k *b = y;
    const __m256 id = static_inverse(d);
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, x += EL_QK_K) {
        b->d = d;
        for (int g = 0; g < EL_QK_K / 32; g++) {
            __m256i q[4];
            _mm256_storeu_si256((__m256i *)(b->qs + 32 * g), static_to_s8(x + 32 * g, id, q));
            b->bsums[2 * g] = (int16_t)hsum_epi32(_mm256_add_epi32(q[0], q[1]));
            b->bsums[2 * g + 1] = (int16_t)hsum_epi32(_mm256_add_epi32(q[2], q[3]));
        }
    }
}

/* A16 row: the reference's arithmetic (d = amax / 32767 over the row; x * (1 / d) rounded to
 * nearest even by cvtps, clamped to -32767..32767), so the same bytes. */
void el_quantize_a16_avx2(const float *x, void *y, int64_t n) {
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

/* A16 row of a fixed scale d: the bytes of el_a16_from_float_static (x * (1 / d) clamped to
 * +-32767, a NaN to -32767 as maxps returns its second operand, rounded to nearest even). */
void el_quantize_a16_static_avx2(const float *x, void *y, int64_t n, float d) {
    el_a16_header h = {.d = d};
    const __m256 id = static_inverse(d);
    const __m256 hi = _mm256_set1_ps(32767.0f), lo = _mm256_set1_ps(-32767.0f);
    char *q = (char *)y + sizeof h;
    for (int64_t i = 0; i < n; i += 16) {
        __m256 va = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), id), lo);
        __m256 vb = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), id), lo);
        __m256i a = _mm256_cvtps_epi32(_mm256_min_ps(va, hi));
        __m256i b = _mm256_cvtps_epi32(_mm256_min_ps(vb, hi));
        __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(q + 2 * i), p);
    }
    memcpy(y, &h, sizeof h);
}

#endif
