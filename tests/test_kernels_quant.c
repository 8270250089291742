/* test_kernels_quant.c - every quantized type against llama.cpp, bit for bit:
 * - to_float against its dequantization: tests/golden/quant_blocks.bin holds blocks (random, all
 *   zero, all fields at their largest, extreme half scales) with the float32 values gguf-py's
 *   quants.py, llama.cpp's NumPy implementation, gives them (tests/golden/make_quant_golden.py);
 * - the weight quantizer against its quantizers: tests/golden/llamacpp_quant.bin holds rows of
 *   floats (ordinary, halves, ties, zero, tiny, outliers) and the bytes llama.cpp's llama-quantize
 *   wrote for them in each type (tests/golden/make_llamacpp_quant_golden.py). */
#include <stdlib.h>
#include <string.h>

#include "kernels/types.h"
#include "testutil.h"

static uint32_t read_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The types the golden must cover: every quantized weight type we compute with. */
static const el_type covered[] = {EL_TYPE_Q4_0, EL_TYPE_Q4_1, EL_TYPE_Q5_0, EL_TYPE_Q5_1,
                                  EL_TYPE_Q8_0, EL_TYPE_Q2_K, EL_TYPE_Q3_K, EL_TYPE_Q4_K,
                                  EL_TYPE_Q5_K, EL_TYPE_Q6_K, EL_TYPE_IQ4_NL, EL_TYPE_IQ4_XS};

static int test_to_float_golden(void) {
    size_t size = 0;
    unsigned char *file = (unsigned char *)test_read_file("tests/golden/quant_blocks.bin", &size);
    CHECK(file != NULL);
    bool seen[EL_TYPE_COUNT] = {false};
    int ok = 1;
    for (size_t at = 0; at + 12 <= size;) {
        uint32_t type = read_le32(file + at), n_blocks = read_le32(file + at + 4);
        uint32_t bytes = read_le32(file + at + 8);
        const el_type_layout *layout = el_type_layout_get(type);
        const el_type_kernels *k = el_type_kernels_get(type);
        CHECK(layout != NULL && k != NULL && layout->type_size == bytes);
        int64_t n = (int64_t)n_blocks * layout->block_size;
        const unsigned char *blocks = file + at + 12;
        const unsigned char *want = blocks + (size_t)n_blocks * bytes;
        at += 12 + (size_t)n_blocks * bytes + (size_t)n * sizeof(float);
        CHECK(at <= size);
        float *got = malloc((size_t)n * sizeof *got);
        CHECK(got != NULL);
        k->to_float(blocks, got, n);
        for (int64_t i = 0; i < n; i++) {
            float w;
            memcpy(&w, want + 4 * i, sizeof w);
            if (memcmp(&got[i], &w, sizeof w) != 0) {
                test_note("%s block %lld element %lld: got %.9g want %.9g", layout->ggml_name,
                          (long long)(i / layout->block_size), (long long)(i % layout->block_size),
                          got[i], w);
                ok = 0;
                break;
            }
        }
        free(got);
        seen[type] = true;
    }
    free(file);
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        if (!seen[covered[i]]) {
            test_note("%s: not in the golden", el_type_layout_get(covered[i])->ggml_name);
            ok = 0;
        }
    }
    CHECK(ok);
    return TEST_PASS;
}

static int test_quantize_golden(void) {
    size_t size = 0;
    unsigned char *file = (unsigned char *)test_read_file("tests/golden/llamacpp_quant.bin", &size);
    CHECK(file != NULL && size >= 8);
    uint32_t n_rows = read_le32(file), n_cols = read_le32(file + 4);
    size_t at = 8 + (size_t)n_rows * n_cols * sizeof(float);
    CHECK(at <= size);
    float *x = malloc((size_t)n_rows * n_cols * sizeof *x);
    CHECK(x != NULL);
    memcpy(x, file + 8, (size_t)n_rows * n_cols * sizeof *x);
    bool seen[EL_TYPE_COUNT] = {false};
    int ok = 1;
    while (at + 8 <= size) {
        uint32_t type = read_le32(file + at), bytes = read_le32(file + at + 4);
        const el_type_kernels *k = el_type_kernels_get(type);
        CHECK(k != NULL && type < EL_TYPE_COUNT);
        size_t row_bytes = el_row_size((el_type)type, n_cols);
        CHECK(bytes == row_bytes * n_rows && at + 8 + bytes <= size);
        const unsigned char *want = file + at + 8;
        at += 8 + bytes;
        unsigned char *got = malloc(row_bytes);
        CHECK(got != NULL);
        for (uint32_t r = 0; r < n_rows; r++) {
            el_type_weight_quantizer(k)(x + (size_t)r * n_cols, got, n_cols);
            if (memcmp(got, want + r * row_bytes, row_bytes) != 0) {
                size_t b = 0;
                while (got[b] == want[r * row_bytes + b]) b++;
                test_note("%s row %u: byte %zu is 0x%02x, llama-quantize's 0x%02x",
                          el_type_layout_get(type)->ggml_name, r, b, got[b], want[r * row_bytes + b]);
                ok = 0;
                break;
            }
        }
        free(got);
        seen[type] = true;
    }
    free(x);
    free(file);
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        if (!seen[covered[i]]) {
            test_note("%s: not in the golden", el_type_layout_get(covered[i])->ggml_name);
            ok = 0;
        }
    }
    CHECK(ok);
    return TEST_PASS;
}

int main(void) {
    run_test("to_float_golden", test_to_float_golden);
    run_test("quantize_golden", test_quantize_golden);
    return tests_exit_code();
}
