/* test_kernels.c - type traits, half/bfloat16 conversions, dequantization of hand-built blocks,
 * quantization round trips and reference dot products against a float reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/types.h"
#include "testutil.h"

/* A roughly Gaussian value (sum of 4 uniforms), so blocks have outliers like real weights. */
static float rand_normal(test_rng *r) {
    float s = 0.0f;
    for (int i = 0; i < 4; i++) s += test_rand_uniform(r, -1.0f, 1.0f);
    return s * 0.866f; /* unit variance */
}

static int test_traits(void) {
    const el_type_layout *q4_k = el_type_layout_get(EL_TYPE_Q4_K);
    CHECK(q4_k != NULL && q4_k->block_size == 256 && q4_k->type_size == 144);
    CHECK(el_type_kernels_get(EL_TYPE_Q4_K)->vec_dot_type == EL_TYPE_Q8_K);
    CHECK(el_type_layout_get(EL_TYPE_Q6_K)->type_size == 210);
    CHECK(el_type_layout_get(EL_TYPE_Q8_0)->type_size == 34);
    CHECK(el_type_layout_get(EL_TYPE_Q4_0)->type_size == 18);
    CHECK(el_type_layout_get(EL_TYPE_Q8_K)->type_size == 292);
    CHECK(el_type_kernels_get(EL_TYPE_Q8_K)->vec_dot == NULL);
    CHECK(el_type_layout_get(EL_TYPE_I32) != NULL);  /* a ggml type we can size... */
    CHECK(el_type_kernels_get(EL_TYPE_I32) == NULL); /* ...but not compute with */
    CHECK(el_type_layout_get(EL_TYPE_Q5_K)->type_size == 176);
    CHECK(el_type_layout_get(EL_TYPE_IQ4_XS)->type_size == 136);
    CHECK(el_type_layout_get(EL_TYPE_IQ4_NL)->type_size == 18);
    CHECK(el_type_kernels_get(EL_TYPE_Q4_1)->vec_dot_type == EL_TYPE_Q8_1);
    CHECK(el_type_kernels_get(EL_TYPE_Q5_0)->vec_dot_type == EL_TYPE_Q8_0);
    CHECK(el_type_kernels_get(EL_TYPE_IQ4_XS)->vec_dot_type == EL_TYPE_Q8_K);
    CHECK(!el_type_is_weight(EL_TYPE_Q8_1));
    CHECK(el_type_layout_get(63) == NULL);  /* between the ggml ids and ours */
    CHECK(el_type_kernels_get(63) == NULL);
    CHECK(el_type_layout_get(EL_TYPE_COUNT) == NULL);
    CHECK(el_type_kernels_get(EL_TYPE_COUNT) == NULL);
    CHECK(el_type_layout_get(0xFFFFFFFFu) == NULL);
    /* sizes from the GGUF layouts: 4096 elements of q4_K = 16 blocks of 144 bytes */
    CHECK(el_row_size(EL_TYPE_Q4_K, 4096) == 2304);
    CHECK(el_row_size(EL_TYPE_Q4_0, 4096) == 2304);
    CHECK(el_row_size(EL_TYPE_Q8_0, 64) == 68);
    CHECK(el_row_size(EL_TYPE_F16, 7) == 14);
    CHECK(el_row_size(EL_TYPE_BF16, 3) == 6);
    CHECK(el_row_size(EL_TYPE_F32, 5) == 20);
    el_type ty;
    CHECK(el_type_from_name("Q4_K", &ty) && ty == EL_TYPE_Q4_K);
    CHECK(el_type_from_name("q6_k", &ty) && ty == EL_TYPE_Q6_K);
    CHECK(el_type_from_name("bf16", &ty) && ty == EL_TYPE_BF16);
    CHECK(el_type_from_name("F32", &ty) && ty == EL_TYPE_F32);
    CHECK(el_type_from_name("q4_1", &ty) && ty == EL_TYPE_Q4_1 && el_type_is_weight(ty));
    CHECK(el_type_from_name("IQ4_XS", &ty) && ty == EL_TYPE_IQ4_XS && el_type_is_weight(ty));
    CHECK(el_type_from_name("i32", &ty) && !el_type_is_weight(ty));
    CHECK(!el_type_from_name("", &ty));
    return TEST_PASS;
}

/* Published IEEE binary16 encodings. */
static int test_fp16_vectors(void) {
    static const struct { float f; uint16_t h; } v[] = {
        {1.0f, 0x3C00},        {-2.0f, 0xC000},         {65504.0f, 0x7BFF},
        {0x1p-24f, 0x0001},    {0x1p-14f, 0x0400},      {0x1.ff8p-15f, 0x03FF},
        {0.0f, 0x0000},        {-0.0f, 0x8000},         {0.333251953125f, 0x3555},
        {INFINITY, 0x7C00},    {-INFINITY, 0xFC00},     {0.5f, 0x3800},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        CHECK(el_fp32_to_fp16(v[i].f) == v[i].h);
        float back = el_fp16_to_fp32(v[i].h);
        CHECK(back == v[i].f && signbit(back) == signbit(v[i].f));
    }
    /* rounding: to nearest, ties to even */
    CHECK(el_fp32_to_fp16(1.0f + 0x1p-11f) == 0x3C00);       /* tie, down to even */
    CHECK(el_fp32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3C02);   /* tie, up to even */
    CHECK(el_fp32_to_fp16(1.0f + 0x1.2p-11f) == 0x3C01);     /* above the tie */
    CHECK(el_fp32_to_fp16(65519.0f) == 0x7BFF);
    CHECK(el_fp32_to_fp16(65520.0f) == 0x7C00);
    CHECK(el_fp32_to_fp16(1e10f) == 0x7C00);
    CHECK(el_fp32_to_fp16(0x1p-25f) == 0x0000);              /* tie between 0 and 2^-24 */
    CHECK(el_fp32_to_fp16(0x1.8p-25f) == 0x0001);
    CHECK(el_fp32_to_fp16(3 * 0x1p-25f) == 0x0002);          /* tie 1.5 -> 2 */
    CHECK(el_fp32_to_fp16(0x1p-30f) == 0x0000);
    CHECK(el_fp32_to_fp16(0x1.ffcp-15f) == 0x0400);          /* subnormal rounds up to normal */
    uint16_t nan = el_fp32_to_fp16(NAN);
    CHECK((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0);
    CHECK(isnan(el_fp16_to_fp32(0x7E00)) && isnan(el_fp16_to_fp32(0xFC01)));
    return TEST_PASS;
}

/* Every half value and many floats, against the compiler's own _Float16 conversions. */
static int test_fp16_exhaustive(void) {
#ifdef __FLT16_MAX__
    for (uint32_t h = 0; h < 65536; h++) {
        _Float16 hf;
        uint16_t hb = (uint16_t)h;
        memcpy(&hf, &hb, 2);
        float want = (float)hf, got = el_fp16_to_fp32(hb);
        if (isnan(want)) {
            CHECK(isnan(got));
            continue;
        }
        CHECK(memcmp(&want, &got, 4) == 0);
        CHECK(el_fp32_to_fp16(got) == hb);
    }
    test_rng r = {7};
    for (int i = 0; i < 2000000; i++) {
        uint32_t bits = test_rand_u32(&r);
        float f;
        memcpy(&f, &bits, 4);
        if (isnan(f)) continue;
        _Float16 want = (_Float16)f;
        uint16_t wb;
        memcpy(&wb, &want, 2);
        if (el_fp32_to_fp16(f) != wb) {
            test_note("f=%a want %04x got %04x", (double)f, wb, el_fp32_to_fp16(f));
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
#else
    return test_skip("the compiler has no _Float16");
#endif
}

static int test_bf16(void) {
    CHECK(el_fp32_to_bf16(1.0f) == 0x3F80);
    CHECK(el_fp32_to_bf16(-2.0f) == 0xC000);
    CHECK(el_fp32_to_bf16(3.14159265f) == 0x4049);
    CHECK(el_fp32_to_bf16(1.0f + 0x1p-8f) == 0x3F80);     /* tie, down to even */
    CHECK(el_fp32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82); /* tie, up to even */
    CHECK(el_fp32_to_bf16(INFINITY) == 0x7F80);
    CHECK(el_fp32_to_bf16(3.4e38f) == 0x7F80);            /* above the largest bf16 */
    CHECK(isnan(el_bf16_to_fp32(el_fp32_to_bf16(NAN))));
    CHECK(el_bf16_to_fp32(0x3F80) == 1.0f);
    CHECK(el_bf16_to_fp32(0x0001) == 0x1p-133f);          /* subnormal */
    CHECK(el_bf16_to_fp32(0xC2F7) == -123.5f);
    return TEST_PASS;
}

/* Blocks built byte by byte from the layout description; expected floats worked out by hand. */
static int test_dequant_q8_0_q4_0(void) {
    el_block_q8_0 b8[2];
    memset(b8, 0, sizeof b8);
    b8[0].d = 0x3800; /* 0.5 */
    b8[0].qs[0] = 1;
    b8[0].qs[5] = -3;
    b8[0].qs[31] = -128;
    b8[1].d = 0xC000; /* -2 */
    b8[1].qs[2] = 7;
    float y[64];
    el_type_kernels_get(EL_TYPE_Q8_0)->to_float(b8, y, 64);
    CHECK(y[0] == 0.5f && y[5] == -1.5f && y[31] == -64.0f && y[1] == 0.0f);
    CHECK(y[34] == -14.0f && y[32] == 0.0f);

    el_block_q4_0 b4;
    memset(b4.qs, 0x88, sizeof b4.qs); /* every element q = 8, value 0 */
    b4.d = 0x4000;                     /* 2 */
    b4.qs[0] = 0x1F;                   /* element 0: 15, element 16: 1 */
    b4.qs[3] = 0x80;                   /* element 3: 0, element 19: 8 */
    b4.qs[15] = 0x98;                  /* element 15: 8, element 31: 9 */
    el_type_kernels_get(EL_TYPE_Q4_0)->to_float(&b4, y, 32);
    CHECK(y[0] == 14.0f && y[16] == -14.0f);
    CHECK(y[3] == -16.0f && y[19] == 0.0f);
    CHECK(y[15] == 0.0f && y[31] == 2.0f);
    CHECK(y[7] == 0.0f && y[20] == 0.0f);
    return TEST_PASS;
}

static int test_dequant_q4_k(void) {
    el_block_q4_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3C00;    /* 1 */
    b.dmin = 0x3800; /* 0.5 */
    /* sub-block 0: scale 3, min 2 (low 6 bits of bytes 0 and 4) */
    b.scales[0] = 3;
    b.scales[4] = 2;
    /* sub-block 1: scale 4, min 1; the top bits of bytes 1 and 5 belong to sub-block 5 */
    b.scales[1] = (uint8_t)(4 | (2 << 6));  /* sub-block 5 scale bits 4-5 = 2 */
    b.scales[5] = (uint8_t)(1 | (1 << 6));  /* sub-block 5 min bits 4-5 = 1 */
    /* sub-block 5: scale 37 = 0b10'0101, min 26 = 0b01'1010; low nibbles in byte 9 */
    b.scales[9] = (uint8_t)(0x5 | (0xA << 4));
    b.qs[0] = 0x47;      /* element 0 (sub-block 0): 7; element 32 (sub-block 1): 4 */
    b.qs[64 + 3] = 0x90; /* element 128+3 (sub-block 4): 0; element 160+3 (sub-block 5): 9 */
    float y[256];
    el_type_kernels_get(EL_TYPE_Q4_K)->to_float(&b, y, 256);
    CHECK(y[0] == 1.0f * 3 * 7 - 0.5f * 2);      /* 20 */
    CHECK(y[1] == -1.0f);                        /* q 0: just -dmin*m */
    CHECK(y[32] == 1.0f * 4 * 4 - 0.5f * 1);     /* 15.5 */
    CHECK(y[163] == 1.0f * 37 * 9 - 0.5f * 26);  /* 320 */
    CHECK(y[131] == 0.0f);                       /* sub-block 4: scale 0, min 0 */
    CHECK(y[170] == -13.0f);                     /* sub-block 5, q 0 */
    CHECK(y[255] == 0.0f);
    return TEST_PASS;
}

/* The word-wise unpacking of all Q4_K scales and mins agrees with el_q4_k_scale_min on every
 * byte pattern a random generator reaches. */
static int test_q4_k_scales_mins(void) {
    test_rng r = {17};
    for (int rep = 0; rep < 2000; rep++) {
        uint8_t scales[12];
        uint32_t words[4];
        for (int i = 0; i < 12; i++) scales[i] = (uint8_t)test_rand_u32(&r);
        el_q4_k_scales_mins(scales, words);
        for (int sb = 0; sb < 8; sb++) {
            int sc, m;
            el_q4_k_scale_min(scales, sb, &sc, &m);
            CHECK(((words[sb / 4] >> 8 * (sb % 4)) & 0xFF) == (uint32_t)sc);
            CHECK(((words[2 + sb / 4] >> 8 * (sb % 4)) & 0xFF) == (uint32_t)m);
        }
    }
    return TEST_PASS;
}

static int test_dequant_q6_k(void) {
    el_block_q6_k b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    b.scales[0] = 2;
    b.scales[9] = -3;
    b.scales[15] = 5;
    b.scales[2] = 1;
    b.ql[0] = 0x05;   /* element 0 low 4 bits 5 */
    b.qh[0] = 0x02;   /* element 0 high 2 bits 2: q = 37 */
    b.ql[32 + 1] = 0x0F; /* element 33 (sub-block 2) low bits 15, high bits 0: q = 15 */
    b.ql[127] = 0xF0; /* element 255: high nibble of ql[64+63] */
    b.qh[63] = 0xC0;  /* element 255: bits 6-7 of qh[32+31]: q = 63 */
    float y[256];
    el_type_kernels_get(EL_TYPE_Q6_K)->to_float(&b, y, 256);
    CHECK(y[0] == 0.25f * 2 * (37 - 32));  /* 2.5 */
    CHECK(y[1] == 0.25f * 2 * -32);        /* q 0 */
    CHECK(y[33] == 0.25f * 1 * (15 - 32));
    CHECK(y[144] == 0.25f * -3 * -32);     /* half 1, element 16: sub-block 9 */
    CHECK(y[255] == 0.25f * 5 * 31);
    CHECK(y[64] == 0.0f);                  /* sub-block 4 has scale 0 */
    return TEST_PASS;
}

static int test_dequant_q8_k_and_halves(void) {
    el_block_q8_k b;
    memset(&b, 0, sizeof b);
    b.d = 0.125f;
    b.qs[0] = 8;
    b.qs[255] = -100;
    float y[256];
    el_type_kernels_get(EL_TYPE_Q8_K)->to_float(&b, y, 256);
    CHECK(y[0] == 1.0f && y[255] == -12.5f && y[100] == 0.0f);
    uint16_t h[3] = {0x3C00, 0xC000, 0x3555};
    el_type_kernels_get(EL_TYPE_F16)->to_float(h, y, 3);
    CHECK(y[0] == 1.0f && y[1] == -2.0f && y[2] == 0.333251953125f);
    uint16_t bf[2] = {0x3F80, 0xC2F7};
    el_type_kernels_get(EL_TYPE_BF16)->to_float(bf, y, 2);
    CHECK(y[0] == 1.0f && y[1] == -123.5f);
    /* q8_K bsums are the sums of 16 quants */
    float x[256];
    test_rng r = {3};
    for (int i = 0; i < 256; i++) x[i] = rand_normal(&r);
    el_type_kernels_get(EL_TYPE_Q8_K)->from_float(x, &b, 256);
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) sum += b.qs[16 * g + j];
        CHECK(b.bsums[g] == sum);
    }
    return TEST_PASS;
}

/* Relative RMS error of quantize -> dequantize on unit-variance data. The bounds follow from the
 * step of each format, whose rounding error has RMS step/sqrt(12):
 *   q8_0: step = max|x|/127 over 32 (max ~2.1) -> ~0.005; bound 0.01
 *   q8_K: step = max|x|/127 over 256 (max ~2.9) -> ~0.007; bound 0.012
 *   q6_K: step = max|x|/32 over 16 (max ~1.8) -> ~0.016, plus int8 scales; bound 0.03
 *   q4_0: step = max|x|/8 over 32 -> ~0.075; bound 0.1
 *   q4_K: step = range/15 over 32 (range ~4.2) -> ~0.08, plus 6-bit scales and mins; bound 0.1
 *   q8_1: q8_0's; q5_0: step = max|x|/16 over 32 -> ~0.04; bound 0.05
 *   q5_1, q5_K: step = range/31 over 32 -> ~0.04, less by the search (q5_K); bound 0.045
 *   q4_1: q4_K's step without the search -> ~0.075; bound 0.09
 *   iq4_nl, iq4_xs: 16 levels, denser near zero, than q4_0's step -> ~0.075; bound 0.09
 *   q3_K: step = max|x|/4 over 16 -> ~0.13, plus 6-bit scales; bound 0.17
 *   q2_K: step = range/3 over 16, less by the search (~0.27); bound 0.32
 *   f16 (11 bits): < 3e-4; bf16 (8 bits): < 3e-3. */
static int test_roundtrip(void) {
    static const struct { el_type type; double bound; } cases[] = {
        {EL_TYPE_F32, 0.0},    {EL_TYPE_F16, 3e-4},  {EL_TYPE_BF16, 3e-3},
        {EL_TYPE_Q8_0, 0.01},  {EL_TYPE_Q8_K, 0.012}, {EL_TYPE_Q6_K, 0.03},
        {EL_TYPE_Q4_0, 0.1},   {EL_TYPE_Q4_K, 0.1},
        {EL_TYPE_Q8_1, 0.01},  {EL_TYPE_Q5_0, 0.05},  {EL_TYPE_Q5_1, 0.045},
        {EL_TYPE_Q5_K, 0.045}, {EL_TYPE_Q4_1, 0.09},  {EL_TYPE_IQ4_NL, 0.09},
        {EL_TYPE_IQ4_XS, 0.09}, {EL_TYPE_Q3_K, 0.17}, {EL_TYPE_Q2_K, 0.32},
    };
    enum { N = 256 * 24 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    void *q = malloc(el_row_size(EL_TYPE_F32, N));
    CHECK(x && y && q);
    test_rng r = {11};
    for (int i = 0; i < N; i++) x[i] = rand_normal(&r);
    /* awkward blocks: all zero, one huge outlier, all equal, all negative */
    for (int i = 0; i < 256; i++) x[i] = 0.0f;
    x[300] = 40.0f;
    for (int i = 512; i < 768; i++) x[i] = 0.75f;
    for (int i = 768; i < 1024; i++) x[i] = -fabsf(x[i]) - 0.5f;
    int ok = 1;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const el_type_kernels *t = el_type_kernels_get(cases[c].type);
        const el_type_layout *layout = el_type_layout_get(cases[c].type);
        t->from_float(x, q, N);
        t->to_float(q, y, N);
        /* the error bound holds for ordinary data; the awkward blocks are checked apart */
        double err = 0.0, ref = 0.0;
        for (int i = 768; i < N; i++) {
            err += (double)(x[i] - y[i]) * (x[i] - y[i]);
            ref += (double)x[i] * x[i];
        }
        double rel = sqrt(err / ref);
        int zero_ok = 1;
        for (int i = 0; i < 256; i++) zero_ok &= y[i] == 0.0f;
        /* an extreme value and a constant block are (nearly) exact in every format */
        int outlier_ok = fabsf(y[300] - 40.0f) <= 0.01f * 40.0f;
        int const_ok = fabsf(y[600] - 0.75f) <= 0.01f * 0.75f;
        if (!(rel <= cases[c].bound) || !zero_ok || !outlier_ok || !const_ok) {
            test_note("%s: relative rms error %.5f (bound %.5f); zero %d outlier %g const %g",
                      layout->ggml_name, rel, cases[c].bound, zero_ok, y[300], y[600]);
            ok = 0;
        }
    }
    free(x);
    free(y);
    free(q);
    CHECK(ok);
    return TEST_PASS;
}

/* Q8_1 carries each block's d * sum q as a half, which the offset types' dot products multiply
 * by the weight block's offset m (at most the block's largest |value|, since the quantizer
 * puts the minimum at level 0): the product is off by up to half a half's ulp of it. */
static double q8_1_sum_slack(const void *aq, const float *xd, int64_t n) {
    const el_block_q8_1 *b = aq;
    double slack = 0.0;
    for (int64_t i = 0; i < n / EL_QK8_0; i++) {
        float m = 0.0f;
        for (int j = 0; j < EL_QK8_0; j++) m = fmaxf(m, fabsf(xd[EL_QK8_0 * i + j]));
        slack += 0x1p-11 * fabs(el_fp16_to_fp32(b[i].s)) * m;
    }
    return slack;
}

/* vec_dot of each weight type against its vec_dot_type must equal the float dot product of the
 * two dequantized operands, up to float rounding of the block sums. */
static int test_vec_dot_ref(void) {
    static const el_type types[] = {EL_TYPE_F32, EL_TYPE_F16, EL_TYPE_BF16, EL_TYPE_Q8_0,
                                    EL_TYPE_Q4_0, EL_TYPE_Q4_K, EL_TYPE_Q6_K, EL_TYPE_Q4_1,
                                    EL_TYPE_Q5_0, EL_TYPE_Q5_1, EL_TYPE_Q2_K, EL_TYPE_Q3_K,
                                    EL_TYPE_Q5_K, EL_TYPE_IQ4_NL, EL_TYPE_IQ4_XS};
    static const int blocks[] = {1, 2, 3, 7};
    test_rng r = {5};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const el_type_kernels *wt = el_type_kernels_get(types[ti]);
        const el_type_layout *wt_layout = el_type_layout_get(types[ti]);
        const el_type_kernels *at = el_type_kernels_get(wt->vec_dot_type);
        for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
            int64_t bs = wt_layout->block_size == 1 ? 32 : wt_layout->block_size;
            int64_t n = bs * blocks[bi] + (wt_layout->block_size == 1 ? 5 : 0);
            float *x = malloc(n * sizeof *x), *a = malloc(n * sizeof *a);
            float *xd = malloc(n * sizeof *xd), *ad = malloc(n * sizeof *ad);
            void *xq = malloc(el_row_size(wt_layout->block_size == 1 ? EL_TYPE_F32 : types[ti], n));
            void *aq = malloc(el_row_size(EL_TYPE_F32, n));
            CHECK(x && a && xd && ad && xq && aq);
            for (int64_t i = 0; i < n; i++) {
                x[i] = rand_normal(&r) * 0.05f;
                a[i] = rand_normal(&r) * 3.0f + 0.5f; /* a bias makes the min term matter */
            }
            wt->from_float(x, xq, n);
            at->from_float(a, aq, n);
            wt->to_float(xq, xd, n);
            at->to_float(aq, ad, n);
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n; i++) {
                want += (double)xd[i] * ad[i];
                mag += fabs((double)xd[i] * ad[i]);
            }
            float got = NAN;
            wt->vec_dot(n, &got, xq, aq);
            double err = fabs(got - want);
            double slack = wt->vec_dot_type == EL_TYPE_Q8_1 ? q8_1_sum_slack(aq, xd, n) : 0.0;
            if (!(err <= 1e-5 * mag + 1e-6 + slack)) {
                test_note("%s n=%lld: got %.8g want %.8g (sum |xy| %.4g)", wt_layout->ggml_name,
                          (long long)n, got, want, mag);
                return TEST_FAIL;
            }
            free(x), free(a), free(xd), free(ad), free(xq), free(aq);
        }
    }
    return TEST_PASS;
}

int main(void) {
    run_test("traits", test_traits);
    run_test("fp16_vectors", test_fp16_vectors);
    run_test("fp16_exhaustive", test_fp16_exhaustive);
    run_test("bf16", test_bf16);
    run_test("dequant_q8_0_q4_0", test_dequant_q8_0_q4_0);
    run_test("dequant_q4_k", test_dequant_q4_k);
    run_test("q4_k_scales_mins", test_q4_k_scales_mins);
    run_test("dequant_q6_k", test_dequant_q6_k);
    run_test("dequant_q8_k_and_halves", test_dequant_q8_k_and_halves);
    run_test("roundtrip", test_roundtrip);
    run_test("vec_dot_ref", test_vec_dot_ref);
    return tests_exit_code();
}
