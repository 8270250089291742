/* train_diffusion.c - `edgelora train-diffusion`: trains the image model on MNIST. */
#include <stdlib.h>
#include <string.h>

#include "diffusion_opts.h"

static const char help[] =
    "usage: edgelora train-diffusion --images IMAGES.gz --labels LABELS.gz -o MODEL.gguf "
    "[options]\n"
    "Trains the image model (a diffusion UNet over 28x28 digits, docs/vision.md) to predict the\n"
    "noise of noised images, and writes the moving average of its weights as a GGUF. The last\n"
    "--heldout images are held out for the eval loss. Progress with an ETA on stderr, the loss\n"
    "curves as an SVG beside the output.\n"
    "  --images FILE         IDX images, 28x28 (gzip or plain)\n"
    "  --labels FILE         IDX labels of the same images\n"
    "  --heldout N           images held out (default 1000)\n"
    "  --channels N          channels at 28x28 (default 32; 2N at 14x14 and 7x7)\n"
    "  --groups N            group norm groups (default 8)\n"
    "  --timesteps N         diffusion timesteps (default 1000)\n"
    "  --ema X               decay of the weights' moving average (default 0.999)\n"
    "  --p-uncond X          fraction of images trained without their class (default 0.2)\n"
    "  -o FILE               the model to write\n"
    "and, with these defaults: --steps 2000, --batch 64, --lr 2e-3, --min-lr-ratio 0.1,\n"
    "--warmup 100, --clip 1, --eval-every 200, --eval-batches 4, --seed 1, -t, --checkpoint,\n"
    "--checkpoint-every, --resume, --no-plot, -q (as for `edgelora train`).\n";

int cmd_train_diffusion(int argc, char **argv) {
    const char *cmd = "train-diffusion";
    el_diffusion_train_params d = el_diffusion_train_default_params();
    cli_train_opts o = cli_diffusion_train_opts(&d);
    const char *out = NULL;
    int rc = CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        double x;
        int r = cli_train_opt(cmd, &o, argc, argv, &i);
        if (r == 0) r = cli_diffusion_data_opt(cmd, &d, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "--channels")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1024, &n))
                goto done;
            d.ch = (int32_t)n;
        } else if (!strcmp(a, "--groups")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1024, &n))
                goto done;
            d.groups = (int32_t)n;
        } else if (!strcmp(a, "--timesteps")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 2, 100000, &n))
                goto done;
            d.n_timesteps = (int32_t)n;
        } else if (!strcmp(a, "--ema")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_float(cmd, a, v, 0, 0.999999, &x))
                goto done;
            d.ema = (float)x;
        } else if (!strcmp(a, "--p-uncond")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_float(cmd, a, v, 0, 1, &x)) goto done;
            d.p_uncond = (float)x;
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
    if (!out || !d.images_path || !d.labels_path) {
        cli_error(cmd, "needs --images, --labels and -o (see --help)");
        goto done;
    }
    if (d.ch % d.groups) {
        cli_error(cmd, "--channels %d is not a multiple of --groups %d", d.ch, d.groups);
        goto done;
    }
    d.temb = 4 * d.ch;
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    cli_diffusion_take_train_opts(&d, &o);
    el_status st = el_train_diffusion(&d, out);
    return cli_train_end(cmd, &o, st, out);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
