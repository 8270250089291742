/* image_eval.c - the image model's scores (edgelora-tools.h): FID-MNIST of its drawings, with and
 * without a class, and its task adapters' PSNR and SSIM against the tasks' ground truth. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora-tools.h"

#include "core/clock.h"
#include "core/error.h"
#include "train/rng.h"
#include "vision/image_model.h"
#include "vision/mnist.h"
#include "vision/tasks.h"

enum { PIX = 784 };

el_image_eval_params el_image_eval_default_params(void) {
    el_image_eval_params p = {
        .n_heldout = 1000, .n_images = 1000, .n_task = 200, .n_steps = 20, .guidance = 3.0f,
        .seed = 1, .n_keep = 0, .n_calib = 64};
    return p;
}

/* The MNIST files, with n_heldout checked against them. */
static el_status load_data(const el_image_eval_params *p, el_mnist *d) {
    if (!p->images_path || !p->labels_path)
        return el_error(EL_ERR_INVALID_ARG, "image eval: images and labels needed");
    el_status st = el_mnist_load(p->images_path, p->labels_path, d);
    if (st != EL_OK) return st;
    int32_t n = d->n;
    if (p->n_heldout < 2 || 2 * p->n_heldout > n) {
        el_mnist_free(d);
        return el_error(EL_ERR_INVALID_ARG, "image eval: %d held-out images of %d (2 to half)",
                        p->n_heldout, n);
    }
    return EL_OK;
}

/* FID-MNIST of images [n][784] against the reference features ref [n_ref][F]. */
static el_status fid_of(const el_digit_classifier *c, const uint8_t *images, int32_t n,
                        const float *ref, int32_t n_ref, double *out) {
    int32_t F = el_digit_classifier_n_features(c);
    float *f = malloc((size_t)n * F * sizeof *f);
    if (!f) return el_error(EL_ERR_NOMEM, "image eval: out of memory");
    el_status st = el_digit_classifier_run(c, n, images, NULL, f);
    if (st == EL_OK) st = el_frechet_distance(f, n, ref, n_ref, F, out);
    free(f);
    return st;
}

el_status el_image_eval_model(el_image_model *m, const el_digit_classifier *c,
                              const el_image_eval_params *p, el_image_eval_generation *out) {
    el_mnist d;
    el_status st = load_data(p, &d);
    if (st != EL_OK) return st;
    if (p->n_images < 2) {
        el_mnist_free(&d);
        return el_error(EL_ERR_INVALID_ARG, "image eval: %d images drawn (at least 2)",
                        p->n_images);
    }
    int32_t H = p->n_heldout, first = d.n - H, F = el_digit_classifier_n_features(c);
    int32_t nc = el_image_model_n_class(m), n = p->n_images, per = n / nc;
    float *ref = malloc((size_t)H * F * sizeof *ref);
    int32_t *labels = malloc((size_t)(H > n ? H : n) * sizeof *labels);
    uint8_t *img = malloc((size_t)n * PIX);
    if (!ref || !labels || !img) st = el_error(EL_ERR_NOMEM, "image eval: out of memory");
    if (per < 1 && st == EL_OK)
        st = el_error(EL_ERR_INVALID_ARG, "image eval: %d images for %d classes", n, nc);
    const uint8_t *held = d.pixels + (size_t)first * PIX;
    if (st == EL_OK) st = el_digit_classifier_run(c, H, held, labels, ref);
    if (st == EL_OK) {
        int32_t right = 0;
        for (int32_t i = 0; i < H; i++) right += labels[i] == d.labels[first + i];
        out->classifier_accuracy = (float)right / (float)H;
        /* the first H training images: real digits, sampled apart from the held-out ones */
        st = fid_of(c, d.pixels, H, ref, H, &out->fid_real);
    }
    el_image_params ip = el_image_default_params();
    ip.n_steps = p->n_steps, ip.seed = p->seed, ip.n_threads = p->n_threads;
    ip.profile = p->profile, ip.adapter = p->adapter;
    double t0 = el_now_seconds();
    out->fid_any = out->s_per_image = NAN;
    if (st == EL_OK && !p->class_only) {
        st = el_image_generate(m, &ip, n, img);
        out->s_per_image = (el_now_seconds() - t0) / n;
        if (st == EL_OK) st = fid_of(c, img, n, ref, H, &out->fid_any);
    }
    ip.guidance = p->guidance;
    t0 = el_now_seconds();
    for (int32_t k = 0; k < nc && st == EL_OK; k++) {
        ip.cls = k, ip.seed = p->seed + 1 + (uint64_t)k;
        st = el_image_generate(m, &ip, per, img + (size_t)k * per * PIX);
    }
    out->s_per_image_guided = (el_now_seconds() - t0) / (per * nc);
    if (st == EL_OK) st = fid_of(c, img, per * nc, ref, H, &out->fid_class);
    if (st == EL_OK) st = el_digit_classifier_run(c, per * nc, img, labels, NULL);
    if (st == EL_OK) {
        int32_t right = 0;
        for (int32_t i = 0; i < per * nc; i++) right += labels[i] == i / per;
        out->class_accuracy = (float)right / (float)(per * nc);
    }
    out->kept = NULL;
    int32_t keep = p->n_keep < per ? p->n_keep : per;
    if (st == EL_OK && keep > 0 && !(out->kept = malloc((size_t)nc * keep * PIX)))
        st = el_error(EL_ERR_NOMEM, "image eval: out of memory");
    for (int32_t k = 0; st == EL_OK && keep > 0 && k < nc; k++)
        memcpy(out->kept + (size_t)k * keep * PIX, img + (size_t)k * per * PIX,
               (size_t)keep * PIX);
    free(ref), free(labels), free(img);
    el_mnist_free(&d);
    return st;
}

/* n examples of task from images first.. of d, each as the training makes it (holes from seed),
 * turned back into 0..255: the sources, masks and ground truths [n][784]. */
static void task_examples(const el_vtask *task, const el_mnist *d, int32_t first, int32_t n,
                          uint64_t seed, uint8_t *src, uint8_t *mask, uint8_t *truth) {
    el_rng rng;
    el_rng_seed(&rng, seed);
    for (int32_t i = 0; i < n; i++) {
        float x0[PIX], cond[2 * PIX], target[PIX];
        const uint8_t *img = d->pixels + (size_t)(first + i) * PIX;
        for (int k = 0; k < PIX; k++) x0[k] = (float)img[k] / 127.5f - 1.0f;
        el_vtask_example(task, &rng, x0, cond, target, mask + (size_t)i * PIX);
        for (int k = 0; k < PIX; k++) {
            src[(size_t)i * PIX + k] = (uint8_t)lrintf((cond[k] + 1.0f) * 127.5f);
            truth[(size_t)i * PIX + k] = (uint8_t)lrintf((target[k] + 1.0f) * 127.5f);
        }
    }
}

el_status el_image_eval_adapter(el_image_model *m, const el_image_adapter *a,
                                const el_image_eval_params *p, el_image_eval_task *out) {
    const el_vtask *task = el_vtask_find(el_image_adapter_task(a));
    if (!task->has_source)
        return el_error(EL_ERR_INVALID_ARG, "image eval: the %s adapter has no ground truth to be "
                        "scored against (its drawings are scored by FID-MNIST)", task->name);
    el_mnist d;
    el_status st = load_data(p, &d);
    if (st != EL_OK) return st;
    int32_t n = p->n_task, first = d.n - p->n_heldout;
    if (n < 1 || n > p->n_heldout) {
        el_mnist_free(&d);
        return el_error(EL_ERR_INVALID_ARG,
                        "image eval: %d task images (1 to the held-out ones, %d)", n,
                        p->n_heldout);
    }
    uint8_t *src = malloc((size_t)n * PIX), *mask = malloc((size_t)n * PIX);
    uint8_t *truth = malloc((size_t)n * PIX), *got = malloc((size_t)n * PIX);
    if (!src || !mask || !truth || !got) st = el_error(EL_ERR_NOMEM, "image eval: out of memory");
    if (st == EL_OK) task_examples(task, &d, first, n, p->seed, src, mask, truth);
    el_image_params ip = el_image_default_params();
    ip.adapter = a, ip.input = src, ip.mask = mask, ip.input_per_image = true;
    ip.n_steps = p->n_steps, ip.seed = p->seed, ip.n_threads = p->n_threads;
    ip.profile = p->profile;
    double t0 = el_now_seconds();
    if (st == EL_OK) st = el_image_generate(m, &ip, n, got);
    out->s_per_image = (el_now_seconds() - t0) / n;
    out->psnr = out->psnr_mask = out->ssim = 0.0;
    out->n = n;
    for (int32_t i = 0; i < n && st == EL_OK; i++) {
        const uint8_t *g = got + (size_t)i * PIX, *t = truth + (size_t)i * PIX;
        out->psnr += fmin(el_image_psnr(g, t, NULL, PIX), 100.0) / n;
        out->psnr_mask += fmin(el_image_psnr(g, t, mask + (size_t)i * PIX, PIX), 100.0) / n;
        out->ssim += el_image_ssim(g, t, 28, 28) / n;
    }
    out->kept = NULL;
    size_t keep = (size_t)(p->n_keep < n ? p->n_keep : n) * PIX;
    if (st == EL_OK && keep && !(out->kept = malloc(3 * keep)))
        st = el_error(EL_ERR_NOMEM, "image eval: out of memory");
    if (st == EL_OK && keep) {
        memcpy(out->kept, src, keep);
        memcpy(out->kept + keep, got, keep);
        memcpy(out->kept + 2 * keep, truth, keep);
    }
    free(src), free(mask), free(truth), free(got);
    el_mnist_free(&d);
    return st;
}

el_status el_image_calibrate(el_image_model *m, const el_image_adapter *a,
                             const el_image_eval_params *p, el_image_precision precision,
                             el_image_profile **out) {
    *out = NULL;
    el_mnist d;
    el_status st = load_data(p, &d);
    if (st != EL_OK) return st;
    int32_t n = p->n_calib;
    el_image_params ip = el_image_default_params();
    ip.n_steps = p->n_steps, ip.seed = p->seed + 1000, ip.n_threads = p->n_threads;
    ip.adapter = a;
    /* every drawing below raises the same ranges; the profile is made from them once */
    float *amax = calloc((size_t)m->u.tb.n, sizeof *amax);
    uint8_t *src = malloc((size_t)n * PIX), *mask = malloc((size_t)n * PIX);
    uint8_t *scratch = malloc((size_t)n * PIX);
    if (n < 2 || n > d.n - p->n_heldout)
        st = el_error(EL_ERR_INVALID_ARG,
                      "image calibration: %d images (2 to the %d training ones)", n,
                      d.n - p->n_heldout);
    else if (!amax || !src || !mask || !scratch)
        st = el_error(EL_ERR_NOMEM, "image calibration: out of memory");
    const el_vtask *task = a ? el_vtask_find(el_image_adapter_task(a)) : NULL;
    if (st == EL_OK && task && task->has_source) { /* the task on the first training images */
        task_examples(task, &d, 0, n, ip.seed, src, mask, scratch);
        ip.input = src, ip.mask = mask, ip.input_per_image = true;
        st = el_image_generate_observed(m, &ip, n, scratch, amax);
    } else if (st == EL_OK) { /* drawings without a class, and of each class (guided, or by a
                               * guide adapter), as the evaluation draws */
        st = el_image_generate_observed(m, &ip, n / 2, scratch, amax);
        int32_t nc = el_image_model_n_class(m), per = (n - n / 2) / nc > 0 ? (n - n / 2) / nc : 1;
        ip.guidance = a ? 1.0f : p->guidance;
        for (int32_t k = 0; k < nc && st == EL_OK; k++) {
            ip.cls = k;
            st = el_image_generate_observed(m, &ip, per, scratch, amax);
        }
    }
    free(src), free(mask), free(scratch);
    el_mnist_free(&d);
    if (st != EL_OK) {
        free(amax);
        return st;
    }
    return el_image_profile_from_ranges(m, precision, amax, out);
}
