/* train_classifier.c - el_train_classifier: the digit classifier of FID-MNIST, trained with
 * cross-entropy and AdamW on the training images (shifted by a few pixels at random, so that it
 * does not learn where digits sit), with the held-out loss and accuracy as it goes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/outfile.h"
#include "train/checkpoint.h"
#include "train/loop.h"
#include "train/optim.h"
#include "train/rng.h"
#include "vision/classifier.h"
#include "vision/mnist.h"

enum { SIDE = 28, PIX = SIDE * SIDE };

el_classifier_train_params el_classifier_train_default_params(void) {
    el_classifier_train_params p = {
        .n_heldout = 1000,
        .c1 = 16,
        .c2 = 32,
        .n_feat = 64,
        .n_steps = 1500,
        .batch = 64,
        .lr = 2e-3f,
        .warmup = 50,
        .max_shift = 2,
        .eval_every = 100,
        .seed = 1,
    };
    return p;
}

/* Image i into x [784] in [-1, 1], moved by (dy, dx) pixels with the background filling in. */
static void load_image(const el_mnist *d, int32_t i, int dy, int dx, float *x) {
    const uint8_t *img = d->pixels + (size_t)i * PIX;
    for (int y = 0; y < SIDE; y++)
        for (int c = 0; c < SIDE; c++) {
            int sy = y - dy, sx = c - dx;
            bool in = sy >= 0 && sy < SIDE && sx >= 0 && sx < SIDE;
            x[y * SIDE + c] = in ? (float)img[sy * SIDE + sx] / 127.5f - 1.0f : -1.0f;
        }
}

/* Mean cross-entropy of logits [B][nc] against labels, the count of right answers, and (if
 * dlogits is not NULL) the gradient of the mean. */
static double cross_entropy(const float *logits, const int32_t *labels, int64_t B, int32_t nc,
                            float *dlogits, int64_t *right) {
    double sum = 0.0;
    for (int64_t b = 0; b < B; b++) {
        const float *z = logits + b * nc;
        int32_t best = 0;
        float mx = z[0];
        for (int32_t k = 1; k < nc; k++)
            if (z[k] > mx) mx = z[k], best = k;
        double den = 0.0;
        for (int32_t k = 0; k < nc; k++) den += exp((double)(z[k] - mx));
        sum += log(den) - (double)(z[labels[b]] - mx);
        *right += best == labels[b];
        for (int32_t k = 0; dlogits && k < nc; k++)
            dlogits[b * nc + k] =
                (float)((exp((double)(z[k] - mx)) / den - (k == labels[b])) / (double)B);
    }
    return sum / (double)B;
}

typedef struct crun {
    el_mnist data;
    el_cnet net;
    float *p, *g, *m, *v, *x, *logits, *dlogits;
    int32_t *labels;
    el_arena arena;
    el_history hist;
} crun;

static void crun_free(crun *r) {
    el_mnist_free(&r->data);
    el_cnet_free(&r->net);
    free(r->p), free(r->g), free(r->m), free(r->v), free(r->x), free(r->logits);
    free(r->dlogits), free(r->labels);
    el_arena_free(&r->arena);
    el_history_free(&r->hist);
}

/* Held-out loss and accuracy over every held-out image, unshifted. */
static el_status evaluate(crun *r, int32_t B, int32_t first, float *loss, float *accuracy) {
    double sum = 0.0;
    int64_t right = 0;
    int32_t nc = r->net.c.n_class;
    for (int32_t i = first; i < r->data.n; i += B) {
        int32_t n = r->data.n - i < B ? r->data.n - i : B;
        for (int32_t b = 0; b < n; b++) {
            load_image(&r->data, i + b, 0, 0, r->x + (size_t)b * PIX);
            r->labels[b] = r->data.labels[i + b];
        }
        el_arena_reset(&r->arena);
        el_status st = el_cnet_forward(&r->net, r->p, n, r->x, r->logits, NULL, &r->arena, NULL);
        if (st != EL_OK) return st;
        sum += cross_entropy(r->logits, r->labels, n, nc, NULL, &right) * n;
    }
    int32_t n_eval = r->data.n - first;
    *loss = (float)(sum / n_eval);
    *accuracy = (float)right / (float)n_eval;
    return EL_OK;
}

static el_status setup(crun *r, const el_classifier_train_params *p) {
    el_status st = el_mnist_load(p->images_path, p->labels_path, &r->data);
    if (st != EL_OK) return st;
    if (p->n_heldout >= r->data.n)
        return el_error(EL_ERR_INVALID_ARG, "%s: %d images, not more than the %d held out",
                        p->images_path, r->data.n, p->n_heldout);
    el_cnet_config c = {p->c1, p->c2, p->n_feat, 10};
    if ((st = el_cnet_init(&r->net, &c)) != EL_OK) return st;
    size_t n = r->net.tb.n_floats, B = (size_t)p->batch;
    r->p = malloc(n * sizeof *r->p), r->g = malloc(n * sizeof *r->g);
    r->m = calloc(n, sizeof *r->m), r->v = calloc(n, sizeof *r->v);
    r->x = malloc(B * PIX * sizeof *r->x), r->logits = malloc(B * 10 * sizeof *r->logits);
    r->dlogits = malloc(B * 10 * sizeof *r->dlogits), r->labels = malloc(B * sizeof *r->labels);
    if (!r->p || !r->g || !r->m || !r->v || !r->x || !r->logits || !r->dlogits || !r->labels)
        return el_error(EL_ERR_NOMEM, "digit classifier training: out of memory");
    el_cnet_init_params(&r->net, r->p, p->seed);
    el_threadpool *tp;
    if ((st = el_train_threads(p->n_threads, &tp)) != EL_OK) return st;
    el_threadpool_free(tp); /* only OpenBLAS's threads run here */
    return EL_OK;
}

static el_status train_step(crun *r, const el_classifier_train_params *p, el_rng *rng,
                            int32_t n_train, int64_t step, float *loss) {
    int32_t B = p->batch, span = 2 * p->max_shift + 1;
    for (int32_t b = 0; b < B; b++) {
        int32_t i = (int32_t)(el_rng_u64(rng) % (uint64_t)n_train);
        int dy = (int)(el_rng_u64(rng) % (uint64_t)span) - p->max_shift;
        int dx = (int)(el_rng_u64(rng) % (uint64_t)span) - p->max_shift;
        load_image(&r->data, i, dy, dx, r->x + (size_t)b * PIX);
        r->labels[b] = r->data.labels[i];
    }
    el_arena_reset(&r->arena);
    el_cnet_acts *acts;
    el_status st = el_cnet_forward(&r->net, r->p, B, r->x, r->logits, NULL, &r->arena, &acts);
    if (st != EL_OK) return st;
    int64_t right = 0;
    *loss = (float)cross_entropy(r->logits, r->labels, B, 10, r->dlogits, &right);
    memset(r->g, 0, r->net.tb.n_floats * sizeof *r->g);
    if ((st = el_cnet_backward(&r->net, r->p, r->g, acts, r->dlogits, &r->arena)) != EL_OK)
        return st;
    float lr = el_lr_schedule(step, p->n_steps, p->warmup, p->lr, 0.05f);
    el_adamw o = {0.9f, 0.999f, 1e-8f, 1e-4f};
    el_clip_grad_norm(r->g, r->net.tb.n_floats, 1.0f);
    el_adamw_step(&o, &r->net.tb, r->p, r->g, r->m, r->v, step + 1, lr);
    return EL_OK;
}

el_status el_train_classifier(const el_classifier_train_params *p, const char *out_path,
                              float *accuracy) {
    if (!p->images_path || !p->labels_path)
        return el_error(EL_ERR_INVALID_ARG, "digit classifier training: images and labels needed");
    if (p->n_steps <= 0 || p->batch <= 0 || !(p->lr > 0 && p->lr < 1) || p->warmup < 0 ||
        p->n_heldout <= 0 || p->eval_every < 0 || p->max_shift < 0 || p->max_shift > 8)
        return el_error(EL_ERR_INVALID_ARG,
                        "digit classifier training: steps, batch, lr (below 1) and held-out "
                        "images must be positive, the shift 0 to 8 pixels");
    el_status st = el_outfile_check_folder(out_path);
    if (st == EL_OK && p->plot_path) st = el_outfile_check_folder(p->plot_path);
    if (st != EL_OK) return st;
    crun r = {0};
    if ((st = setup(&r, p)) != EL_OK) {
        crun_free(&r);
        return st;
    }
    el_rng rng;
    el_rng_seed(&rng, p->seed ^ 0xc1a55ull);
    int32_t n_train = r.data.n - p->n_heldout;
    double t0 = el_now_seconds();
    float acc = 0.0f;
    for (int64_t step = 0; step < p->n_steps && st == EL_OK; step++) {
        el_train_progress pr = {.step = step + 1, .n_steps = p->n_steps, .eval_loss = NAN};
        if ((st = train_step(&r, p, &rng, n_train, step, &pr.loss)) != EL_OK) break;
        pr.lr = el_lr_schedule(step, p->n_steps, p->warmup, p->lr, 0.05f);
        if ((st = el_history_add(&r.hist, false, (float)(step + 1), pr.loss)) != EL_OK) break;
        if ((p->eval_every && (step + 1) % p->eval_every == 0) || step + 1 == p->n_steps) {
            if ((st = evaluate(&r, p->batch, n_train, &pr.eval_loss, &acc)) != EL_OK) break;
            st = el_history_add(&r.hist, true, (float)(step + 1), pr.eval_loss);
        }
        pr.elapsed_s = el_now_seconds() - t0;
        pr.tokens_per_s = (double)(step + 1) * p->batch / fmax(pr.elapsed_s, 1e-9);
        if (st == EL_OK && p->progress && !p->progress(p->user, &pr))
            st = el_error(EL_ERR_CANCELLED, "training stopped at step %lld", (long long)step + 1);
    }
    if (st == EL_OK && p->plot_path)
        st = el_history_plot(&r.hist, p->plot_path, "digit classifier", "cross-entropy");
    if (st == EL_OK) st = el_cnet_save(out_path, &r.net, r.p);
    if (st == EL_OK && accuracy) *accuracy = acc;
    crun_free(&r);
    return st;
}
