/* digit_classifier.c - the public digit classifier (edgelora-tools.h): a loaded el_cnet that
 * labels images and gives their features. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vision/classifier.h"

enum { PIX = 784, CHUNK = 64 };

struct el_digit_classifier {
    el_cnet net;
    float *p;
};

el_status el_digit_classifier_load(const char *path, el_digit_classifier **out) {
    el_digit_classifier *c = calloc(1, sizeof *c);
    if (!c) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = el_cnet_load(path, &c->net, &c->p);
    if (st != EL_OK) {
        free(c);
        return st;
    }
    *out = c;
    return EL_OK;
}

void el_digit_classifier_free(el_digit_classifier *c) {
    if (!c) return;
    el_cnet_free(&c->net);
    free(c->p);
    free(c);
}

int32_t el_digit_classifier_n_features(const el_digit_classifier *c) { return c->net.c.n_feat; }

el_status el_digit_classifier_run(const el_digit_classifier *c, int32_t n, const uint8_t *images,
                                  int32_t *labels, float *features) {
    int32_t nc = c->net.c.n_class, F = c->net.c.n_feat;
    float *x = malloc((size_t)CHUNK * PIX * sizeof *x);
    float *logits = malloc((size_t)CHUNK * nc * sizeof *logits);
    el_arena arena = {0};
    el_status st = x && logits ? EL_OK : el_error(EL_ERR_NOMEM, "digit classifier: out of memory");
    for (int32_t first = 0; first < n && st == EL_OK; first += CHUNK) {
        int32_t m = n - first < CHUNK ? n - first : CHUNK;
        for (int64_t i = 0; i < (int64_t)m * PIX; i++)
            x[i] = (float)images[(size_t)first * PIX + (size_t)i] / 127.5f - 1.0f;
        el_arena_reset(&arena);
        st = el_cnet_forward(&c->net, c->p, m, x, logits, features ? features + (size_t)first * F
                                                                   : NULL,
                             &arena, NULL);
        for (int32_t b = 0; st == EL_OK && labels && b < m; b++) {
            int32_t best = 0;
            for (int32_t k = 1; k < nc; k++)
                if (logits[b * nc + k] > logits[b * nc + best]) best = k;
            labels[first + b] = best;
        }
    }
    el_arena_free(&arena);
    free(x), free(logits);
    return st;
}
