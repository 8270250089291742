/* image_profile.c - `edgelora image-profile`: calibrates the image model's integer form. */
#include <string.h>

#include "diffusion_opts.h"

static const char help[] =
    "usage: edgelora image-profile -m MODEL.gguf --precision w8a16|w8a8 --images IMAGES.gz\n"
    "                              --labels LABELS.gz [--lora TASK.gguf] -o PROFILE.gguf\n"
    "Calibrates a quantization profile of the image model (docs/vision.md): every convolution\n"
    "int8 per output channel, its input int16 (w8a16) or int8 (w8a8) at a static scale, the\n"
    "largest input the float model gives it on the training images (not the last --heldout):\n"
    "with --lora, on its task's examples; without, on drawings without and with each class.\n"
    "`edgelora image --profile` and `eval-image --profile` draw with it.\n"
    "  --calib N             images calibrated on (default 64)\n"
    "  --steps N             DDIM steps of the drawings (default 20)\n"
    "  --guidance G          of the drawings with a class (default 3)\n"
    "  --heldout N, --seed N, -t N as for eval-image\n";

int cmd_image_profile(int argc, char **argv) {
    const char *cmd = "image-profile", *model = NULL, *lora = NULL, *out = NULL, *prec = NULL;
    el_image_eval_params p = el_image_eval_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_image_eval_opt(cmd, &p, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--lora")) {
            if (!(lora = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--precision")) {
            if (!(prec = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error(cmd, "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    el_image_precision precision;
    if (!cli_image_precision(cmd, prec, &precision)) return CLI_USAGE;
    if (!model || !out || !p.images_path || !p.labels_path || precision == EL_IMAGE_FLOAT) {
        cli_error(cmd, "needs -m, --precision w8a16|w8a8, --images, --labels and -o");
        return CLI_USAGE;
    }
    el_image_model *m;
    el_image_adapter *ad = NULL;
    el_image_profile *pr = NULL;
    el_status st = el_image_model_load(model, &m);
    if (st != EL_OK) return cli_fail(cmd, st);
    if (lora) st = el_image_adapter_load(m, lora, &ad);
    if (st == EL_OK) st = el_image_calibrate(m, ad, &p, precision, &pr);
    if (st == EL_OK) st = el_image_profile_save(pr, out);
    el_image_profile_free(pr);
    el_image_adapter_free(ad);
    el_image_model_free(m);
    if (st != EL_OK) return cli_fail(cmd, st);
    fprintf(stderr, "wrote %s (%s, calibrated on %d images%s%s)\n", out, prec, p.n_calib,
            lora ? " of the task of " : "", lora ? lora : "");
    return CLI_OK;
}
