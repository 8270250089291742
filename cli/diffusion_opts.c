/* diffusion_opts.c - the options the image model's commands share (see diffusion_opts.h). */
#include <string.h>

#include "diffusion_opts.h"

cli_train_opts cli_diffusion_train_opts(const el_diffusion_train_params *d) {
    cli_train_opts o = {.p = el_train_default_params(), .unit = "img"};
    o.p.n_steps = d->n_steps, o.p.batch = d->batch, o.p.lr = d->lr, o.p.warmup = d->warmup;
    o.p.min_lr_ratio = d->min_lr_ratio, o.p.grad_clip = d->grad_clip, o.p.seed = d->seed;
    o.p.eval_every = d->eval_every, o.p.eval_batches = d->eval_batches;
    return o;
}

int cli_diffusion_data_opt(const char *cmd, el_diffusion_train_params *d, int argc, char **argv,
                           int *i) {
    const char *a = argv[*i], *v;
    long n;
    if (!strcmp(a, "--images")) return (d->images_path = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(a, "--labels")) return (d->labels_path = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (strcmp(a, "--heldout")) return 0;
    if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1 << 24, &n)) return -1;
    d->n_heldout = (int32_t)n;
    return 1;
}

void cli_diffusion_take_train_opts(el_diffusion_train_params *d, const cli_train_opts *o) {
    d->n_steps = o->p.n_steps, d->batch = o->p.batch, d->lr = o->p.lr, d->warmup = o->p.warmup;
    d->min_lr_ratio = o->p.min_lr_ratio, d->grad_clip = o->p.grad_clip, d->seed = o->p.seed;
    d->eval_every = o->p.eval_every, d->eval_batches = o->p.eval_batches;
    d->n_threads = o->p.n_threads, d->checkpoint_path = o->p.checkpoint_path;
    d->checkpoint_every = o->p.checkpoint_every, d->resume = o->p.resume;
    d->plot_path = o->p.plot_path, d->progress = o->p.progress, d->user = o->p.user;
}

int cli_image_eval_opt(const char *cmd, el_image_eval_params *p, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    long n;
    double x;
    if (!strcmp(a, "--images")) return (p->images_path = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(a, "--labels")) return (p->labels_path = cli_value(cmd, argc, argv, i)) ? 1 : -1;
    if (!strcmp(a, "--heldout") || !strcmp(a, "--steps") || !strcmp(a, "--calib")) {
        if (!(v = cli_value(cmd, argc, argv, i)) ||
            !cli_int(cmd, a, v, !strcmp(a, "--calib") ? 2 : 1, 1 << 20, &n))
            return -1;
        *(!strcmp(a, "--heldout") ? &p->n_heldout : !strcmp(a, "--steps") ? &p->n_steps
                                                                           : &p->n_calib) =
            (int32_t)n;
        return 1;
    }
    if (!strcmp(a, "--guidance")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 100, &x)) return -1;
        p->guidance = (float)x;
        return 1;
    }
    if (!strcmp(a, "--seed"))
        return (v = cli_value(cmd, argc, argv, i)) && cli_u64(cmd, a, v, &p->seed) ? 1 : -1;
    if (strcmp(a, "-t") && strcmp(a, "--threads")) return 0;
    if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1024, &n)) return -1;
    p->n_threads = (int32_t)n;
    return 1;
}
