/* eval_image.c - `edgelora eval-image`: FID-MNIST of the image model's drawings and the PSNR and
 * SSIM of its task adapters, as a Markdown table (or JSON). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diffusion_opts.h"

static const char help[] =
    "usage: edgelora eval-image -m MODEL.gguf --classifier CLASSIFIER.gguf --images IMAGES.gz\n"
    "                           --labels LABELS.gz [--lora TASK.gguf ...] [options]\n"
    "Scores the image model (docs/vision.md) on the held-out MNIST images (the last --heldout):\n"
    "FID-MNIST (the Frechet distance of the classifier's features, from `edgelora\n"
    "train-classifier`) of images drawn without a class and class by class with guidance, the\n"
    "fraction of the latter the classifier reads as the class asked, and the same FID for as\n"
    "many training images (real digits: the floor). Each --lora is run on held-out images as its\n"
    "task's training makes examples and scored against the task's ground truth: PSNR over the\n"
    "whole image and over the pixels drawn, SSIM.\n"
    "  -m FILE               the image model\n"
    "  --classifier FILE     the digit classifier whose features FID-MNIST compares\n"
    "  --images, --labels    the MNIST files; --heldout N as for train-diffusion (default 1000)\n"
    "  --lora FILE           a task adapter to score (repeatable)\n"
    "  --no-generation       score only the adapters\n"
    "  --precision P         float (default), w8a16 or w8a8: the model and each adapter under\n"
    "                        its own profile, calibrated here (as `edgelora image-profile`)\n"
    "  --profile FILE        all of them under this one profile instead\n"
    "  --calib N             images each profile is calibrated on (default 64)\n"
    "  -n N                  images drawn for each FID (default 1000)\n"
    "  --task-images N       held-out images each task runs on (default 200)\n"
    "  --steps N             DDIM steps (default 20)\n"
    "  --guidance G          of the class-guided set (default 3)\n"
    "  --seed N              noise and holes (default 1)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  --json                one JSON object instead of the tables\n"
    "  --grids PREFIX        also write PREFIX-classes.png (a row of drawings per class) and\n"
    "                        PREFIX-TASK.png per adapter (rows: source, result, ground truth)\n"
    "  --grid-cols N         images a row in those grids (default 10)\n";

enum { MAX_LORA = 16 };

/* What eval-image found, for its printers. */
typedef struct report {
    const char *model, *classifier, *profile;
    el_image_precision precision;
    const el_image_eval_params *p;
    const el_image_eval_generation *g; /* NULL: --no-generation */
    int n_lora;
    const char *const *lora;
    const char (*task)[32];
    const el_image_eval_task *t;         /* n < 0: scored by drawings, in gk */
    const el_image_eval_generation *gk;
    const double *load_ms;
} report;

static void print_json(const report *r) {
    const el_image_eval_params *p = r->p;
    const el_image_eval_generation *g = r->g;
    printf("{\"model\": \"%s\", \"precision\": \"%s\", \"profile\": \"%s\", \"steps\": %d",
           r->model, el_image_precision_name(r->precision), r->profile ? r->profile : "",
           p->n_steps);
    if (g)
        printf(", \"classifier_accuracy\": %.4f, \"fid_mnist_real\": %.4f, "
               "\"fid_mnist_any\": %.4f, \"fid_mnist_class\": %.4f, \"class_accuracy\": %.4f, "
               "\"guidance\": %g, \"images\": %d, \"s_per_image\": %.5f, "
               "\"s_per_image_guided\": %.5f",
               g->classifier_accuracy, g->fid_real, g->fid_any, g->fid_class, g->class_accuracy,
               p->guidance, p->n_images, g->s_per_image, g->s_per_image_guided);
    printf(", \"tasks\": [");
    for (int k = 0; k < r->n_lora; k++) {
        const el_image_eval_task *t = &r->t[k];
        printf("%s{\"adapter\": \"%s\", \"task\": \"%s\", \"load_ms\": %.3f, ", k ? ", " : "",
               r->lora[k], r->task[k], r->load_ms[k]);
        if (t->n < 0)
            printf("\"images\": %d, \"fid_mnist_class\": %.4f, \"class_accuracy\": %.4f, "
                   "\"s_per_image\": %.5f}",
                   p->n_images, r->gk[k].fid_class, r->gk[k].class_accuracy,
                   r->gk[k].s_per_image_guided);
        else
            printf("\"images\": %d, \"psnr\": %.4f, \"psnr_drawn\": %.4f, \"ssim\": %.4f, "
                   "\"s_per_image\": %.5f}",
                   t->n, t->psnr, t->psnr_mask, t->ssim, t->s_per_image);
    }
    printf("]}\n");
}

static void print_tables(const report *r) {
    const el_image_eval_params *p = r->p;
    const el_image_eval_generation *g = r->g;
    const char *prec = el_image_precision_name(r->precision);
    bool drawn = g != NULL, scored = false;
    for (int k = 0; k < r->n_lora; k++) drawn |= r->t[k].n < 0, scored |= r->t[k].n >= 0;
    if (drawn) {
        printf("FID-MNIST: classifier %s; DDIM %d steps; %s%s%s\n\n", r->classifier, p->n_steps,
               prec, r->profile ? ", profile " : "", r->profile ? r->profile : "");
        printf("| images | FID-MNIST | read as the class asked | s/image |\n"
               "| --- | --- | --- | --- |\n");
    }
    if (g) {
        printf("| %d real (training); the classifier reads %.1f%% of the held-out right | %.3f | "
               "| |\n",
               p->n_heldout, 100.0 * g->classifier_accuracy, g->fid_real);
        printf("| %d drawn, no class | %.3f | | %.4f |\n", p->n_images, g->fid_any, g->s_per_image);
        printf("| %d drawn by class, guidance %g | %.3f | %.1f%% | %.4f |\n", p->n_images,
               p->guidance, g->fid_class, 100.0 * g->class_accuracy, g->s_per_image_guided);
    }
    for (int k = 0; k < r->n_lora; k++)
        if (r->t[k].n < 0)
            printf("| %d drawn by class with %s (%s) | %.3f | %.1f%% | %.4f |\n", p->n_images,
                   r->lora[k], r->task[k], r->gk[k].fid_class, 100.0 * r->gk[k].class_accuracy,
                   r->gk[k].s_per_image_guided);
    if (!scored) return;
    printf("%s| adapter | task | precision | images | PSNR dB | PSNR dB, drawn pixels | SSIM "
           "| s/image | load ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
           drawn ? "\n" : "");
    for (int k = 0; k < r->n_lora; k++) {
        const el_image_eval_task *t = &r->t[k];
        if (t->n >= 0)
            printf("| %s | %s | %s | %d | %.2f | %.2f | %.4f | %.4f | %.2f |\n", r->lora[k],
                   r->task[k], prec, t->n, t->psnr, t->psnr_mask, t->ssim, t->s_per_image,
                   r->load_ms[k]);
    }
}

int cmd_eval_image(int argc, char **argv) {
    const char *cmd = "eval-image", *model = NULL, *classifier = NULL, *lora[MAX_LORA];
    const char *grids = NULL, *prec = NULL, *profile = NULL;
    int n_lora = 0;
    bool json = false, generation = true;
    el_image_eval_params p = el_image_eval_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        int r = cli_image_eval_opt(cmd, &p, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--classifier")) {
            if (!(classifier = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--lora")) {
            if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
            if (n_lora == MAX_LORA) {
                cli_error(cmd, "at most %d --lora", MAX_LORA);
                return CLI_USAGE;
            }
            lora[n_lora++] = v;
        } else if (!strcmp(a, "--precision")) {
            if (!(prec = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--profile")) {
            if (!(profile = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--no-generation")) {
            generation = false;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--task-images")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1 << 20, &n))
                return CLI_USAGE;
            *(!strcmp(a, "-n") ? &p.n_images : &p.n_task) = (int32_t)n;
        } else if (!strcmp(a, "--grids")) {
            if (!(grids = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--grid-cols")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 64, &n))
                return CLI_USAGE;
            p.n_keep = (int32_t)n;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else {
            cli_error(cmd, "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!model || !p.images_path || !p.labels_path || (generation && !classifier)) {
        cli_error(cmd, "needs -m, --images, --labels and --classifier (see --help)");
        return CLI_USAGE;
    }
    el_image_precision precision;
    if (!cli_image_precision(cmd, prec, &precision) && prec) return CLI_USAGE;
    if (profile && prec) {
        cli_error(cmd, "--profile and --precision: the profile has its own precision");
        return CLI_USAGE;
    }
    if (!generation && !n_lora) {
        cli_error(cmd, "--no-generation with no --lora: nothing to score");
        return CLI_USAGE;
    }
    if (!grids) p.n_keep = 0;
    else if (!p.n_keep) p.n_keep = 10;
    el_image_model *m;
    el_digit_classifier *c = NULL;
    el_status st = el_image_model_load(model, &m);
    if (st != EL_OK) return cli_fail(cmd, st);
    if (classifier && (st = el_digit_classifier_load(classifier, &c)) != EL_OK) {
        el_image_model_free(m);
        return cli_fail(cmd, st);
    }
    el_image_eval_generation g = {0};
    el_image_eval_task t[MAX_LORA] = {0};
    el_image_eval_generation gk[MAX_LORA] = {0}; /* of adapters scored by their drawings */
    double load_ms[MAX_LORA] = {0}; /* switching to an adapter: loading it (binding is free) */
    int32_t n_class = el_image_model_n_class(m);
    char task[MAX_LORA][32];
    el_image_profile *shared = NULL, *own = NULL;
    if (profile && (st = el_image_profile_load(m, profile, &shared)) == EL_OK)
        precision = el_image_profile_precision(shared);
    p.profile = shared;
    if (st == EL_OK && generation && precision != EL_IMAGE_FLOAT && !shared &&
        (st = el_image_calibrate(m, NULL, &p, precision, &own)) == EL_OK)
        p.profile = own;
    if (st == EL_OK && generation) st = el_image_eval_model(m, c, &p, &g);
    el_image_profile_free(own);
    p.profile = shared;
    bool printed = false; /* an error already told */
    for (int k = 0; k < n_lora && st == EL_OK && !printed; k++) {
        el_image_adapter *ad;
        own = NULL;
        double t0 = cli_now_ms();
        if ((st = el_image_adapter_load(m, lora[k], &ad)) != EL_OK) break;
        load_ms[k] = cli_now_ms() - t0;
        snprintf(task[k], sizeof task[k], "%s", el_image_adapter_task(ad));
        if (precision != EL_IMAGE_FLOAT && !shared &&
            (st = el_image_calibrate(m, ad, &p, precision, &own)) == EL_OK)
            p.profile = own;
        if (st == EL_OK && el_image_task_takes_source(task[k])) {
            st = el_image_eval_adapter(m, ad, &p, &t[k]);
        } else if (st == EL_OK && !c) {
            printed = true;
            cli_error(cmd, "--lora %s (task %s) is scored by FID-MNIST: it needs --classifier",
                      lora[k], task[k]);
        } else if (st == EL_OK) { /* drawings by class with the adapter, one forward a step */
            el_image_eval_params gp = p;
            gp.adapter = ad, gp.guidance = 1.0f, gp.class_only = true;
            st = el_image_eval_model(m, c, &gp, &gk[k]);
            t[k].n = -1;
        }
        el_image_adapter_free(ad);
        el_image_profile_free(own);
        p.profile = shared;
    }
    el_image_profile_free(shared);
    el_digit_classifier_free(c);
    el_image_model_free(m);
    bool written = st == EL_OK && !printed;
    char path[4096];
    int32_t per = p.n_images / n_class, cols = p.n_keep < per ? p.n_keep : per;
    if (written && grids && generation) {
        snprintf(path, sizeof path, "%s-classes.png", grids);
        written = cli_write_image_grid(cmd, path, g.kept, n_class, cols);
    }
    for (int k = 0; written && grids && k < n_lora; k++) {
        snprintf(path, sizeof path, "%s-%s.png", grids, task[k]);
        written = t[k].n < 0 ? cli_write_image_grid(cmd, path, gk[k].kept, n_class, cols)
                             : cli_write_image_grid(cmd, path, t[k].kept, 3,
                                                    p.n_keep < t[k].n ? p.n_keep : t[k].n);
    }
    free(g.kept);
    for (int k = 0; k < n_lora; k++) free(t[k].kept), free(gk[k].kept);
    if (st != EL_OK) return cli_fail(cmd, st);
    if (!written) return CLI_FAIL;
    report r = {model, classifier, profile, precision, &p, generation ? &g : NULL,
                n_lora, lora, (const char(*)[32])task, t, gk, load_ms};
    if (json)
        print_json(&r);
    else
        print_tables(&r);
    return CLI_OK;
}
