/* train_classifier.c - `edgelora train-classifier`: the digit classifier of FID-MNIST. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora train-classifier --images IMAGES.gz --labels LABELS.gz -o CLASSIFIER.gguf "
    "[options]\n"
    "Trains the small digit classifier whose features FID-MNIST compares (docs/vision.md) and\n"
    "prints its held-out accuracy. The last --heldout images are held out, as for\n"
    "train-diffusion, so that both see the same training images.\n"
    "  --images FILE         IDX images, 28x28 (gzip or plain)\n"
    "  --labels FILE         IDX labels of the same images\n"
    "  --heldout N           images held out (default 1000)\n"
    "  --channels C1,C2      channels of the two convolutions (default 16,32)\n"
    "  --features N          width of the feature layer (default 64)\n"
    "  --shift N             training images move up to N pixels each way (default 2)\n"
    "  -o FILE               the classifier to write\n"
    "and, with these defaults: --steps 1500, --batch 64, --lr 2e-3, --warmup 50,\n"
    "--eval-every 100, --seed 1, -t, --no-plot, -q (as for `edgelora train`).\n";

int cmd_train_classifier(int argc, char **argv) {
    const char *cmd = "train-classifier";
    el_classifier_train_params c = el_classifier_train_default_params();
    cli_train_opts o = {.p = el_train_default_params(), .unit = "img"};
    o.p.n_steps = c.n_steps, o.p.batch = c.batch, o.p.lr = c.lr, o.p.warmup = c.warmup;
    o.p.eval_every = c.eval_every, o.p.seed = c.seed;
    const char *out = NULL;
    int rc = CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        int r = cli_train_opt(cmd, &o, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "--images")) {
            if (!(c.images_path = cli_value(cmd, argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--labels")) {
            if (!(c.labels_path = cli_value(cmd, argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--heldout")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1 << 24, &n))
                goto done;
            c.n_heldout = (int32_t)n;
        } else if (!strcmp(a, "--channels")) {
            int c1, c2, end = 0;
            if (!(v = cli_value(cmd, argc, argv, &i))) goto done;
            if (sscanf(v, "%d,%d%n", &c1, &c2, &end) != 2 || v[end] || c1 < 1 || c2 < 1 ||
                c1 > 1024 || c2 > 1024) {
                cli_error(cmd, "%s '%s': two channel counts 1 to 1024, as 16,32", a, v);
                goto done;
            }
            c.c1 = c1, c.c2 = c2;
        } else if (!strcmp(a, "--features")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 2, 4096, &n))
                goto done;
            c.n_feat = (int32_t)n;
        } else if (!strcmp(a, "--shift")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 0, 8, &n)) goto done;
            c.max_shift = (int32_t)n;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(cmd, argc, argv, &i))) goto done;
        } else {
            cli_error(cmd, "unknown option '%s'", a);
            goto done;
        }
    }
    if (o.p.n_train_files || o.p.n_eval_files) {
        cli_error(cmd, "takes --images and --labels, not -f or --eval");
        goto done;
    }
    if (o.p.checkpoint_path || o.p.resume) {
        cli_error(cmd, "has no checkpoints (a run takes about a minute)");
        goto done;
    }
    if (!out || !c.images_path || !c.labels_path) {
        cli_error(cmd, "needs --images, --labels and -o (see --help)");
        goto done;
    }
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    c.n_steps = o.p.n_steps, c.batch = o.p.batch, c.lr = o.p.lr, c.warmup = o.p.warmup;
    c.eval_every = o.p.eval_every, c.seed = o.p.seed, c.n_threads = o.p.n_threads;
    c.plot_path = o.p.plot_path, c.progress = o.p.progress, c.user = o.p.user;
    float accuracy = 0.0f;
    el_status st = el_train_classifier(&c, out, &accuracy);
    rc = cli_train_end(cmd, &o, st, out);
    if (rc == CLI_OK)
        printf("held-out accuracy %.2f%% (%d images)\n", 100.0 * accuracy, c.n_heldout);
    return rc;
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
