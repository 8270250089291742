/* quant.c - the image model's integer convolutions (see quant.h). */
#include "vision/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/types.h"

enum { BLOCK = 32 };

static int64_t padded(int64_t k) { return (k + BLOCK - 1) / BLOCK * BLOCK; }

/* Whether tensor i is a convolution weight, and which. */
static const el_unet_conv *conv_of(const el_unet *u, int32_t i) {
    const el_unet_conv *all[] = {&u->conv_in,  &u->conv_out, &u->attn.q,  &u->attn.k,
                                 &u->attn.v,   &u->attn.o,   &u->d0.c1,   &u->d0.c2,
                                 &u->d0.skip,  &u->d1.c1,    &u->d1.c2,   &u->d1.skip,
                                 &u->m0.c1,    &u->m0.c2,    &u->m0.skip, &u->m1.c1,
                                 &u->m1.c2,    &u->m1.skip,  &u->u1.c1,   &u->u1.c2,
                                 &u->u1.skip,  &u->u0.c1,    &u->u0.c2,   &u->u0.skip};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        if (all[k]->w == i) return all[k];
    return NULL;
}

el_status el_unet_quant_init(el_unet_quant *q, const el_unet *u, const float *p,
                             el_image_precision precision, const float *amax) {
    memset(q, 0, sizeof *q);
    if (precision != EL_IMAGE_W8A16 && precision != EL_IMAGE_W8A8)
        return el_error(EL_ERR_INVALID_ARG, "image model: no integer form '%s'",
                        el_image_precision_name(precision));
    el_type type = precision == EL_IMAGE_W8A16 ? EL_TYPE_W8A16 : EL_TYPE_W8;
    float levels = el_unet_act_levels(precision);
    q->precision = precision;
    q->n = u->tb.n;
    q->w = calloc((size_t)q->n, sizeof *q->w);
    size_t bytes = 0;
    for (int32_t i = 0; i < q->n; i++) {
        const el_unet_conv *c = conv_of(u, i);
        if (c) bytes += el_row_size(type, padded((int64_t)c->cin * c->k * c->k)) * (size_t)c->cout;
    }
    q->data = malloc(bytes);
    float *row = malloc((size_t)padded(4096 * 9) * sizeof *row);
    if (!q->w || !q->data || !row) {
        free(row);
        el_unet_quant_free(q);
        return el_error(EL_ERR_NOMEM, "image model: out of memory for the integer weights");
    }
    const el_type_kernels *tk = el_type_kernels_get(type);
    char *at = q->data;
    el_status st = EL_OK;
    for (int32_t i = 0; i < q->n && st == EL_OK; i++) {
        const el_unet_conv *c = conv_of(u, i);
        if (!c) continue;
        if (!(amax[i] > 0.0f) || !isfinite(amax[i])) {
            st = el_error(EL_ERR_INVALID_ARG, "image model: no calibrated input range for %s",
                          u->tb.t[i].name);
            break;
        }
        int64_t K = (int64_t)c->cin * c->k * c->k, KP = padded(K);
        el_weight w = el_weight_view(type, at, KP, c->cout);
        w.act_scale = amax[i] / levels;
        const float *src = p + u->tb.t[i].offset;
        for (int64_t o = 0; o < c->cout; o++) {
            memcpy(row, src + o * K, (size_t)K * sizeof *row);
            memset(row + K, 0, (size_t)(KP - K) * sizeof *row);
            tk->from_float(row, at + (size_t)o * w.row_bytes, KP);
        }
        at += (size_t)c->cout * w.row_bytes;
        q->w[i] = w;
    }
    free(row);
    if (st != EL_OK) el_unet_quant_free(q);
    return st;
}

float el_unet_act_levels(el_image_precision precision) {
    return precision == EL_IMAGE_W8A16 ? 32767.0f : 127.0f;
}

void el_unet_fake_quant_weights(const el_unet *u, float *p) {
    for (int32_t i = 0; i < u->tb.n; i++) {
        if (!conv_of(u, i)) continue;
        const el_ttensor *t = &u->tb.t[i];
        for (int64_t o = 0; o < t->n_out; o++) {
            float *row = p + t->offset + o * t->n_in, mx = 0.0f;
            for (int64_t j = 0; j < t->n_in; j++) mx = fmaxf(mx, fabsf(row[j]));
            float d = mx / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f; /* as el_i8_quantize */
            for (int64_t j = 0; j < t->n_in; j++) row[j] = d * rintf(row[j] * id);
        }
    }
}

void el_unet_quant_free(el_unet_quant *q) {
    free(q->w);
    free(q->data);
    memset(q, 0, sizeof *q);
}

/* rows [p1 - p0][KP]: the row of pixel p = y*side + x holds what im2col's column p holds (input
 * channel, kernel row, kernel column), zero outside the image and in the padding. */
static void pixel_rows(float *rows, const float *img, int64_t cin, int64_t side, int64_t k,
                       int64_t KP, int64_t p0, int64_t p1) {
    int64_t r = k / 2, HW = side * side;
    for (int64_t p = p0; p < p1; p++) {
        int64_t y = p / side, x = p % side;
        float *out = rows + (p - p0) * KP;
        bool inside = y >= r && y < side - r && x >= r && x < side - r;
        int64_t j = 0;
        for (int64_t c = 0; c < cin; c++) {
            const float *plane = img + c * HW;
            for (int64_t ky = 0; ky < k; ky++) {
                int64_t sy = y + ky - r;
                if (inside) { /* most pixels: the whole window is in the image */
                    const float *src = plane + sy * side + x - r;
                    for (int64_t kx = 0; kx < k; kx++) out[j++] = src[kx];
                    continue;
                }
                for (int64_t kx = 0; kx < k; kx++, j++) {
                    int64_t sx = x + kx - r;
                    bool in = sy >= 0 && sy < side && sx >= 0 && sx < side;
                    out[j] = in ? plane[sy * side + sx] : 0.0f;
                }
            }
        }
        memset(out + j, 0, (size_t)(KP - j) * sizeof *out);
    }
}

void el_unet_qconv_forward(const el_unet_quant *q, const el_unet_conv *c, const float *b,
                           int64_t B, int64_t side, const float *x, float *y, el_arena *a) {
    /* pixels a product: their rows stay in cache from being written to being quantized */
    enum { PIXELS = 112 };
    const el_weight *w = &q->w[c->w];
    int64_t HW = side * side, KP = w->n_in, cout = c->cout;
    el_arena_mark m = el_arena_get_mark(a);
    float *rows = el_arena_alloc(a, (size_t)(PIXELS * KP));
    float *out = el_arena_alloc(a, (size_t)(PIXELS * cout));
    size_t scratch_floats = (el_matmul_scratch_size(w, PIXELS) + sizeof(float) - 1) / sizeof(float);
    float *scratch = el_arena_alloc(a, scratch_floats ? scratch_floats : 1);
    if (a->failed) return;
    for (int64_t i = 0; i < B; i++) {
        float *yi = y + i * cout * HW;
        for (int64_t p0 = 0; p0 < HW; p0 += PIXELS) {
            int64_t n = HW - p0 < PIXELS ? HW - p0 : PIXELS;
            pixel_rows(rows, x + i * c->cin * HW, c->cin, side, c->k, KP, p0, p0 + n);
            el_matmul(q->tp, w, rows, KP, n, out, cout, scratch);
            for (int64_t o = 0; o < cout; o++)
                for (int64_t j = 0; j < n; j++)
                    yi[o * HW + p0 + j] = out[j * cout + o] + (b ? b[o] : 0.0f);
        }
    }
    el_arena_release(a, m);
}
