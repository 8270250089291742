/* quant_k.c - reference conversions of the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (blocks of
 * 256 with quantized sub-block scales).
 *
 * to_float computes what ggml's dequantize_row_* computes, operation for operation, so the
 * floats are bit for bit llama.cpp's. from_float is ggml's reference quantizer
 * (quantize_row_*_ref, what llama-quantize writes without an importance matrix): a weighted
 * search of each sub-block's scale (and min), then the scales quantized against the block's
 * largest and the elements quantized again against the scales the reader will see. */
#include <math.h>
#include <string.h>

#include "kernels/blocks.h"

/* Rounds to nearest, ties to even (ggml's nearest_int). */
static int nearest(float x) { return (int)lrintf(x); }

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The affine fit x ~ scale * L + min, L in 0..nmax, of ggml's make_qkx2_quants: from the range's
 * fit, try nstep + 1 stretched grids and keep the least-squares (scale, min) of the grid whose
 * weighted error (absolute if use_mad, else squared) is smallest. min is at most 0 and is
 * returned negated in *neg_min. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0], sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min), scale = 1 / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        best_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    uint8_t trial[32];
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * (x[i] - min)), 0, nmax);
            trial[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det <= 0) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float error = 0;
        for (int i = 0; i < n; i++) {
            float diff = this_scale * trial[i] + this_min - x[i];
            error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
        }
        if (error < best_error) {
            memcpy(L, trial, (size_t)n);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

/* The signed scale of ggml's make_q3_quants with its search (weights x^2): L in -nmax..nmax-1
 * from the extreme value's grid, then up to 5 passes that move single elements to the level the
 * others' least-squares scale asks for while that improves the fit. */
static float fit_signed_scale(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    if (amax < 1e-15f) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx <= 0) continue;
            float sl2 = suml2 - w * L[i] * L[i];
            int l = clampi(nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (l == L[i]) continue;
            slx += w * x[i] * l;
            sl2 += w * l * l;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t)l;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Q2_K's and Q3_K's 2-bit fields, as el_k_2bit reads them. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int h = 0; h < EL_QK_K; h += 128)
        for (int l = 0; l < 32; l++)
            qs[h / 4 + l] = (uint8_t)(L[h + l] | L[h + l + 32] << 2 | L[h + l + 64] << 4 |
                                      L[h + l + 96] << 6);
}

void el_q2_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q2_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K) {
        float d = el_fp16_to_fp32(b->d), min = el_fp16_to_fp32(b->dmin);
        for (int s = 0; s < 16; s++) {
            float dl = d * (b->scales[s] & 0xF), ml = min * (b->scales[s] >> 4);
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * el_k_2bit(b->qs, 16 * s + l) - ml;
        }
    }
}

static void q2_k_quantize_block(const float *x, el_block_q2_k *b) {
    uint8_t L[EL_QK_K];
    float w[16], scales[16], mins[16], max_scale = 0, max_min = 0;
    for (int s = 0; s < 16; s++) {
        for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * s + l]);
        scales[s] = fit_scale_min(16, 3, x + 16 * s, w, L + 16 * s, &mins[s], -0.5f, 0.1f, 15, true);
        if (scales[s] > max_scale) max_scale = scales[s];
        if (mins[s] > max_min) max_min = mins[s];
    }
    memset(b->scales, 0, sizeof b->scales);
    if (max_scale > 0) {
        float iscale = 15.0f / max_scale;
        for (int s = 0; s < 16; s++) b->scales[s] = (uint8_t)nearest(iscale * scales[s]);
    }
    b->d = el_fp32_to_fp16(max_scale > 0 ? max_scale / 15.0f : 0.0f);
    if (max_min > 0) {
        float iscale = 15.0f / max_min;
        for (int s = 0; s < 16; s++) b->scales[s] |= (uint8_t)(nearest(iscale * mins[s]) << 4);
    }
    b->dmin = el_fp32_to_fp16(max_min > 0 ? max_min / 15.0f : 0.0f);
    for (int s = 0; s < 16; s++) {
        float d = el_fp16_to_fp32(b->d) * (b->scales[s] & 0xF);
        if (d == 0.0f) continue; /* keeps the search's levels */
        float dm = el_fp16_to_fp32(b->dmin) * (b->scales[s] >> 4);
        for (int l = 0; l < 16; l++) L[16 * s + l] = (uint8_t)clampi(nearest((x[16 * s + l] + dm) / d), 0, 3);
    }
    pack_2bit(L, b->qs);
}

void el_q2_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q2_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q2_k_quantize_block(x + i * EL_QK_K, b + i);
}

void el_q3_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q3_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K) {
        float d = el_fp16_to_fp32(b->d);
        int8_t sc[16];
        el_q3_k_scales(b->scales, sc);
        for (int s = 0; s < 16; s++) {
            float dl = d * sc[s];
            for (int l = 0; l < 16; l++) y[16 * s + l] = dl * el_q3_k_level(b, 16 * s + l);
        }
    }
}

/* Sub-block s's 6-bit scale field (its signed scale + 32) goes into a nibble of byte s % 8
 * and two bits of byte 8 + s % 4 (see el_q3_k_scales). */
static void q3_k_store_scale(uint8_t scales[12], int s, int field) {
    scales[s % 8] |= (uint8_t)((field & 0xF) << 4 * (s / 8));
    scales[8 + s % 4] |= (uint8_t)((field >> 4) << 2 * (s / 4));
}

static void q3_k_quantize_block(const float *x, el_block_q3_k *b) {
    int8_t L[EL_QK_K];
    float scales[16], max_scale = 0, amax = 0;
    for (int s = 0; s < 16; s++) {
        scales[s] = fit_signed_scale(16, 4, x + 16 * s, L + 16 * s);
        if (fabsf(scales[s]) > amax) {
            amax = fabsf(scales[s]);
            max_scale = scales[s];
        }
    }
    memset(b->scales, 0, sizeof b->scales);
    b->d = el_fp32_to_fp16(0.0f);
    if (max_scale != 0.0f) {
        float iscale = -32.0f / max_scale;
        for (int s = 0; s < 16; s++) q3_k_store_scale(b->scales, s, clampi(nearest(iscale * scales[s]), -32, 31) + 32);
        b->d = el_fp32_to_fp16(1 / iscale);
    }
    int8_t sc[16];
    el_q3_k_scales(b->scales, sc);
    for (int s = 0; s < 16; s++) {
        float d = el_fp16_to_fp32(b->d) * sc[s];
        if (d == 0.0f) continue; /* keeps the search's levels */
        for (int l = 0; l < 16; l++) L[16 * s + l] = (int8_t)(clampi(nearest(x[16 * s + l] / d), -4, 3) + 4);
    }
    /* levels 4..7 keep their high bit in hmask and store level - 4 */
    uint8_t low[EL_QK_K];
    memset(b->hmask, 0, sizeof b->hmask);
    for (int e = 0; e < EL_QK_K; e++) {
        int high = L[e] > 3;
        b->hmask[e % 32] |= (uint8_t)(high << (e / 32));
        low[e] = (uint8_t)(L[e] - 4 * high);
    }
    pack_2bit(low, b->qs);
}

void el_q3_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q3_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q3_k_quantize_block(x + i * EL_QK_K, b + i);
}

void el_q5_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q5_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K) {
        float d = el_fp16_to_fp32(b->d), min = el_fp16_to_fp32(b->dmin);
        for (int s = 0; s < 8; s++) {
            int sc, m;
            el_q4_k_scale_min(b->scales, s, &sc, &m);
            float ds = d * sc, ms = min * m;
            for (int l = 0; l < 32; l++) y[32 * s + l] = ds * el_q5_k_level(b, 32 * s + l) - ms;
        }
    }
}

/* Q4_K's and Q5_K's levels L (0..nmax) and 6-bit scales and mins of ggml's quantize_row_q4_K_ref
 * and _q5_K_ref: each sub-block of 32 fitted by fit_scale_min (weights: the sub-block's rms plus
 * |x|) with the search of nstep grids from nmax + rmin, the scales and mins quantized against
 * the block's largest, then the levels again against what the reader will see. */
static void q45_k_levels(const float *x, int nmax, float rmin, int nstep, uint8_t L[EL_QK_K],
                         uint8_t scales[12], uint16_t *d16, uint16_t *dmin16) {
    float w[32], sub_scales[8], mins[8], max_scale = 0, max_min = 0;
    for (int s = 0; s < 8; s++) {
        const float *xs = x + 32 * s;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xs[l]);
        sub_scales[s] = fit_scale_min(32, nmax, xs, w, L + 32 * s, &mins[s], rmin, 0.1f, nstep, false);
        if (sub_scales[s] > max_scale) max_scale = sub_scales[s];
        if (mins[s] > max_min) max_min = mins[s];
    }
    float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    int ls[8], lm[8];
    for (int s = 0; s < 8; s++) {
        /* ggml keeps the rounded value in a byte before capping it */
        ls[s] = (uint8_t)nearest(inv_scale * sub_scales[s]);
        lm[s] = (uint8_t)nearest(inv_min * mins[s]);
        if (ls[s] > 63) ls[s] = 63;
        if (lm[s] > 63) lm[s] = 63;
    }
    el_q4_k_pack_scales_mins(ls, lm, scales);
    *d16 = el_fp32_to_fp16(max_scale / 63.0f);
    *dmin16 = el_fp32_to_fp16(max_min / 63.0f);
    for (int s = 0; s < 8; s++) {
        int sc, m;
        el_q4_k_scale_min(scales, s, &sc, &m);
        float d = el_fp16_to_fp32(*d16) * sc;
        if (d == 0.0f) continue; /* keeps the search's levels */
        float dm = el_fp16_to_fp32(*dmin16) * m;
        for (int l = 0; l < 32; l++) L[32 * s + l] = (uint8_t)clampi(nearest((x[32 * s + l] + dm) / d), 0, nmax);
    }
}

void el_q4_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q4_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++) {
        float d = el_fp16_to_fp32(b->d), min = el_fp16_to_fp32(b->dmin);
        for (int c = 0; c < 4; c++) { /* 64 elements: two sub-blocks share 32 bytes */
            const uint8_t *q = b->qs + 32 * c;
            int sc0, m0, sc1, m1;
            el_q4_k_scale_min(b->scales, 2 * c, &sc0, &m0);
            el_q4_k_scale_min(b->scales, 2 * c + 1, &sc1, &m1);
            float d0 = d * sc0, min0 = min * m0, d1 = d * sc1, min1 = min * m1;
            for (int l = 0; l < 32; l++) *y++ = d0 * (q[l] & 0xF) - min0;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] >> 4) - min1;
        }
    }
}

static void q4_k_quantize_block(const float *x, el_block_q4_k *b) {
    uint8_t L[EL_QK_K];
    q45_k_levels(x, 15, -1.0f, 20, L, b->scales, &b->d, &b->dmin);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) b->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

void el_q4_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q4_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q4_k_quantize_block(x + i * EL_QK_K, b + i);
}

static void q5_k_quantize_block(const float *x, el_block_q5_k *b) {
    uint8_t L[EL_QK_K];
    q45_k_levels(x, 31, -0.5f, 15, L, b->scales, &b->d, &b->dmin);
    memset(b->qh, 0, sizeof b->qh);
    memset(b->qs, 0, sizeof b->qs);
    for (int e = 0; e < EL_QK_K; e++) {
        int c = e / 64, l = e % 32, upper = e % 64 / 32;
        b->qs[32 * c + l] |= (uint8_t)((L[e] & 0xF) << 4 * upper);
        b->qh[l] |= (uint8_t)((L[e] >> 4) << (2 * c + upper));
    }
}

void el_q5_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q5_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q5_k_quantize_block(x + i * EL_QK_K, b + i);
}

/* The signed scale of ggml's make_qx_quants (rmse_type 1: weights x^2, no importance matrix):
 * L (stored + nmax, in 0..2 nmax - 1) from the extreme value's grid, then the grids of
 * nmax + 0.1 is (is in -9..9) tried, keeping the one whose least-squares scale explains the most
 * (sumlx^2 / suml2). */
static float fit_symmetric_scale(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }
    if (amax < 1e-15f) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clampi(nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Where element e (0..255) of a Q6_K block lives: its byte in ql and whether it is the high
 * nibble, and its byte and bit shift in qh (see el_block_q6_k). */
static void q6_k_locate(int e, int *ql_byte, int *ql_shift, int *qh_byte, int *qh_shift) {
    int half = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
    *ql_byte = 64 * half + l + 32 * (quarter & 1);
    *ql_shift = 4 * (quarter >> 1);
    *qh_byte = 32 * half + l;
    *qh_shift = 2 * quarter;
}

void el_q6_k_to_float(const void *x, float *y, int64_t n) {
    const el_block_q6_k *b = x;
    for (int64_t i = 0; i < n / EL_QK_K; i++, b++, y += EL_QK_K) {
        float d = el_fp16_to_fp32(b->d);
        for (int e = 0; e < EL_QK_K; e++) {
            int qlb, qls, qhb, qhs;
            q6_k_locate(e, &qlb, &qls, &qhb, &qhs);
            int q = ((b->ql[qlb] >> qls) & 0xF) | (((b->qh[qhb] >> qhs) & 3) << 4);
            y[e] = d * b->scales[e / 16] * (q - 32);
        }
    }
}

/* ggml's quantize_row_q6_K_ref: each sub-block of 16 fitted by fit_symmetric_scale (levels
 * -32..31), the 16 scales quantized to int8 against the one of largest magnitude (mapped to
 * -128, capped at 127), then the levels again against what the reader will see. */
static void q6_k_quantize_block(const float *x, el_block_q6_k *b) {
    int8_t L[EL_QK_K];
    float scales[16], max_scale = 0, max_abs = 0;
    for (int s = 0; s < 16; s++) {
        scales[s] = fit_symmetric_scale(16, 32, x + 16 * s, L + 16 * s);
        if (fabsf(scales[s]) > max_abs) {
            max_abs = fabsf(scales[s]);
            max_scale = scales[s];
        }
    }
    memset(b, 0, sizeof *b);
    if (max_abs < 1e-15f) return; /* all zero */
    float iscale = -128.0f / max_scale;
    b->d = el_fp32_to_fp16(1 / iscale);
    for (int s = 0; s < 16; s++) {
        int ls = nearest(iscale * scales[s]);
        b->scales[s] = (int8_t)(ls < 127 ? ls : 127);
    }
    for (int s = 0; s < 16; s++) {
        float d = el_fp16_to_fp32(b->d) * b->scales[s];
        if (d == 0.0f) continue; /* keeps the search's levels */
        for (int l = 0; l < 16; l++) L[16 * s + l] = (int8_t)(clampi(nearest(x[16 * s + l] / d), -32, 31) + 32);
    }
    for (int e = 0; e < EL_QK_K; e++) {
        int qlb, qls, qhb, qhs;
        q6_k_locate(e, &qlb, &qls, &qhb, &qhs);
        b->ql[qlb] |= (uint8_t)((L[e] & 0xF) << qls);
        b->qh[qhb] |= (uint8_t)((L[e] >> 4) << qhs);
    }
}

void el_q6_k_from_float(const float *x, void *y, int64_t n) {
    el_block_q6_k *b = y;
    for (int64_t i = 0; i < n / EL_QK_K; i++) q6_k_quantize_block(x + i * EL_QK_K, b + i);
}
