/* gptq.c - GPTQ with lazy batch updates over the Cholesky factor of the inverse Hessian.
 *
 * With H^-1 = U^T U (U upper triangular), rounding column i and moving its error
 * e = (w_i - q_i) / U_ii along row i of U is the optimal update of the columns after i for the
 * layer output error (the derivation of GPTQ's paper). Columns are taken in blocks: inside a
 * block the update is applied column by column to the block, and the block's accumulated
 * errors reach every later column at once (one dgemm), which is the same arithmetic reordered.
 * Everything is in double: the weights are few next to the Hessian's cost. */
#include "compress/gptq.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "kernels/types.h"

enum { DEFAULT_BLOCK = 128 };

el_status el_gptq_grid_get(const char *type, int32_t group, el_gptq_grid *out) {
    static const struct {
        const char *name;
        el_type type;
        int32_t group;
    } grids[] = {
        {"q4_0", EL_TYPE_Q4_0, 32},
        {"w4g32", EL_TYPE_W4G32, 32},
        {"w4g64", EL_TYPE_W4G64, 64},
        {"w4g128", EL_TYPE_W4G128, 128},
    };
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
        bool named = type ? strcasecmp(type, grids[i].name) == 0
                          : grids[i].type != EL_TYPE_Q4_0 && group == grids[i].group;
        if (!named) continue;
        if (group != 0 && group != grids[i].group)
            return el_error(EL_ERR_INVALID_ARG,
                            "--group %d does not fit type %s, whose groups are %d (groups of 64 "
                            "and 128 are the types w4g64 and w4g128)",
                            group, grids[i].name, grids[i].group);
        *out = (el_gptq_grid){grids[i].type, grids[i].group};
        return EL_OK;
    }
    if (type)
        return el_error(EL_ERR_INVALID_ARG,
                        "compress: type '%s' is not a 4-bit type GPTQ writes (q4_0, w4g32, "
                        "w4g64, w4g128)",
                        type);
    return el_error(EL_ERR_INVALID_ARG, "--group %d: the group sizes are 32, 64 and 128", group);
}

/* The fp16-rounded scale of a group of n values, as the reader will see it. */
static float group_scale(const double *x, int64_t stride, int32_t n, el_type type) {
    double amax = 0, max = 0;
    for (int32_t j = 0; j < n; j++) {
        double v = x[j * stride];
        if (fabs(v) > amax) {
            amax = fabs(v);
            max = v;
        }
    }
    /* q4_0 maps the signed extreme to -8, the w4g types are symmetric over -7..7 */
    float d = type == EL_TYPE_Q4_0 ? (float)(max / -8.0) : (float)(amax / 7.0);
    return el_fp16_to_fp32(el_fp32_to_fp16(d));
}

/* The nibble (0..15) of x on the grid of scale d. */
static int quant_nibble(double x, float d, el_type type) {
    if (d == 0.0f) return 8;
    if (type == EL_TYPE_Q4_0) {
        int q = (int)floor(x / d + 8.5);
        return q < 0 ? 0 : q > 15 ? 15 : q;
    }
    long q = lrint(x / d);
    return (int)(q < -7 ? -7 : q > 7 ? 7 : q) + 8;
}

/* Writes group gi of a row: the scale, then the nibbles in chunks of 32 (element j of a chunk
 * in the low nibble of byte j, element j + 16 in the high one). */
static void pack_group(uint8_t *row, int64_t gi, int32_t group, float d, const uint8_t *nib) {
    uint8_t *b = row + (size_t)gi * (2 + (size_t)group / 2);
    uint16_t h = el_fp32_to_fp16(d);
    memcpy(b, &h, sizeof h);
    for (int32_t c = 0; c < group / 32; c++)
        for (int j = 0; j < 16; j++)
            b[2 + c * 16 + j] = (uint8_t)(nib[c * 32 + j] | nib[c * 32 + j + 16] << 4);
}

/* The state of one quantization: the weight in double, the scale and nibbles of every group. */
typedef struct quant_state {
    double *w;    /* [rows][cols] */
    float *scale; /* [rows][cols / group] */
    uint8_t *nib; /* [rows][cols] */
    int64_t rows, cols;
    el_gptq_grid grid;
} quant_state;

static el_status state_init(quant_state *s, const float *w, int64_t rows, int64_t cols,
                            el_gptq_grid grid) {
    *s = (quant_state){.rows = rows, .cols = cols, .grid = grid};
    if (cols % grid.group != 0)
        return el_error(EL_ERR_INVALID_ARG, "gptq: rows of %lld do not divide into groups of %d",
                        (long long)cols, grid.group);
    s->w = malloc((size_t)(rows * cols) * sizeof *s->w);
    s->scale = malloc((size_t)(rows * (cols / grid.group)) * sizeof *s->scale);
    s->nib = malloc((size_t)(rows * cols));
    if (!s->w || !s->scale || !s->nib) return el_error(EL_ERR_NOMEM, "gptq: out of memory");
    for (int64_t i = 0; i < rows * cols; i++) s->w[i] = w[i];
    return EL_OK;
}

static void state_free(quant_state *s) {
    free(s->w);
    free(s->scale);
    free(s->nib);
}

/* Sets the scales of the group starting at column c from the current weight. */
static void state_group_scales(quant_state *s, int64_t c) {
    for (int64_t r = 0; r < s->rows; r++)
        s->scale[r * (s->cols / s->grid.group) + c / s->grid.group] =
            group_scale(s->w + r * s->cols + c, 1, s->grid.group, s->grid.type);
}

/* Rounds column c of row r: stores its nibble and returns the dequantized value. */
static double state_round(quant_state *s, int64_t r, int64_t c) {
    float d = s->scale[r * (s->cols / s->grid.group) + c / s->grid.group];
    int q = quant_nibble(s->w[r * s->cols + c], d, s->grid.type);
    s->nib[r * s->cols + c] = (uint8_t)q;
    return (double)d * (q - 8);
}

/* The dequantized weight into w, and the packed rows. */
static void state_finish(const quant_state *s, float *w, void *packed) {
    int32_t g = s->grid.group;
    size_t row_bytes = el_row_size(s->grid.type, s->cols);
    for (int64_t r = 0; r < s->rows; r++)
        for (int64_t c = 0; c < s->cols; c++) {
            float d = s->scale[r * (s->cols / g) + c / g];
            w[r * s->cols + c] = d * (float)(s->nib[r * s->cols + c] - 8);
        }
    if (!packed) return;
    for (int64_t r = 0; r < s->rows; r++)
        for (int64_t gi = 0; gi < s->cols / g; gi++)
            pack_group((uint8_t *)packed + (size_t)r * row_bytes, gi, g,
                       s->scale[r * (s->cols / g) + gi], s->nib + r * s->cols + gi * g);
}

void el_rtn_quantize(float *w, int64_t rows, int64_t cols, el_gptq_grid grid, void *packed) {
    quant_state s;
    if (state_init(&s, w, rows, cols, grid)) {
        state_free(&s);
        return;
    }
    for (int64_t c = 0; c < cols; c++) {
        if (c % grid.group == 0) state_group_scales(&s, c);
        for (int64_t r = 0; r < rows; r++) state_round(&s, r, c);
    }
    state_finish(&s, w, packed);
    state_free(&s);
}

/* U with H^-1 = U^T U for the damped h (cols x cols, into u). Inputs never seen (zero on the
 * diagonal) get 1 there, so they do not make H singular; their weight is zeroed by the caller. */
static el_status inverse_hessian_factor(const double *h, int64_t n, double damp, double *u) {
    double mean = 0;
    for (int64_t i = 0; i < n; i++) mean += h[i * n + i];
    mean /= (double)n;
    memcpy(u, h, (size_t)(n * n) * sizeof *u);
    for (int64_t i = 0; i < n; i++) {
        if (u[i * n + i] == 0) u[i * n + i] = 1;
        u[i * n + i] += damp * mean;
    }
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, u, (lapack_int)n) != 0 ||
        LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, u, (lapack_int)n) != 0)
        return el_error(EL_ERR_INVALID_ARG,
                        "gptq: the damped Hessian is not positive definite (raise the damping)");
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) u[i * n + j] = u[j * n + i];
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, u, (lapack_int)n) != 0)
        return el_error(EL_ERR_INVALID_ARG, "gptq: the inverse Hessian is not positive definite");
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < i; j++) u[i * n + j] = 0;
    return EL_OK;
}

el_status el_gptq_quantize(float *w, int64_t rows, int64_t cols, const double *h, double damp,
                           int32_t block, el_gptq_grid grid, void *packed) {
    quant_state s;
    el_status st = state_init(&s, w, rows, cols, grid);
    /* a block holds whole groups, so a group's scale sees the updates of its own block */
    int64_t bk = block > 0 ? block : DEFAULT_BLOCK;
    bk = (bk + grid.group - 1) / grid.group * grid.group;
    double *u = st ? NULL : malloc((size_t)(cols * cols) * sizeof *u);
    double *err = st ? NULL : malloc((size_t)(rows * bk) * sizeof *err);
    if (st == EL_OK && (!u || !err)) st = el_error(EL_ERR_NOMEM, "gptq: out of memory");
    if (st == EL_OK) st = inverse_hessian_factor(h, cols, damp, u);
    if (st == EL_OK)
        for (int64_t c = 0; c < cols; c++)
            if (h[c * cols + c] == 0)
                for (int64_t r = 0; r < rows; r++) s.w[r * cols + c] = 0;
    for (int64_t c0 = 0; st == EL_OK && c0 < cols; c0 += bk) {
        int64_t c1 = c0 + bk < cols ? c0 + bk : cols;
        for (int64_t c = c0; c < c1; c++) {
            if (c % grid.group == 0) state_group_scales(&s, c);
            const double *uc = u + c * cols;
            for (int64_t r = 0; r < rows; r++) {
                double *wr = s.w + r * cols;
                double e = (wr[c] - state_round(&s, r, c)) / uc[c];
                for (int64_t j = c + 1; j < c1; j++) wr[j] -= e * uc[j];
                err[r * bk + (c - c0)] = e;
            }
        }
        if (c1 < cols)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)(cols - c1),
                        (int)(c1 - c0), -1.0, err, (int)bk, u + c0 * cols + c1, (int)cols, 1.0,
                        s.w + c1, (int)cols);
    }
    if (st == EL_OK) state_finish(&s, w, packed);
    free(u);
    free(err);
    state_free(&s);
    return st;
}
