/* finetune_diffusion.c - `edgelora finetune-diffusion`: trains a task adapter of the image
 * model on MNIST, the model frozen. */
#include <stdlib.h>
#include <string.h>

#include "diffusion_opts.h"

static const char help[] =
    "usage: edgelora finetune-diffusion -m MODEL.gguf --task TASK --images IMAGES.gz\n"
    "                                   --labels LABELS.gz -o TASK.gguf [options]\n"
    "Trains a LoRA adapter on every convolution of the image model (docs/vision.md) for a task,\n"
    "the model frozen; `edgelora image --lora TASK.gguf` runs it. Tasks, each made from the\n"
    "training images:\n"
    "  inpaint   fill a masked rectangle (8 to 18 pixels a side): the model's condition\n"
    "            channels carry the image with the hole blanked, and the mask\n"
    "  bold      stroke editing: the image, drawn again with its strokes widened (the target\n"
    "            is a 3x3 grey dilation)\n"
    "  upscale   the image at 14x14 (shown doubled): drawn at 28x28\n"
    "  guide     class-guided drawing in one forward a step: the adapter learns to predict\n"
    "            what the model predicts with classifier-free guidance --guidance (two)\n"
    "  -m FILE               the image model\n"
    "  --task NAME           inpaint, bold, upscale or guide\n"
    "  --guidance G          guide: the guidance it learns (default 3)\n"
    "  --distill FILE        QUAD's distillation: train this adapter further (its task, rank\n"
    "                        and alpha) to draw under --profile's integer form what it draws\n"
    "                        with the float model\n"
    "  --profile FILE        with --distill: the profile (from `edgelora image-profile`)\n"
    "  --rank N              LoRA rank (default 4)\n"
    "  --alpha X             LoRA alpha (default 4; the terms are scaled by alpha / rank)\n"
    "  --images, --labels, --heldout as for train-diffusion; -o FILE the adapter to write\n"
    "and, with these defaults: --steps 2000, --batch 64, --lr 2e-3, --min-lr-ratio 0.1,\n"
    "--warmup 100, --clip 1, --eval-every 200, --eval-batches 4, --seed 1, -t, --no-plot, -q\n"
    "(as for `edgelora train`; no checkpoints yet).\n";

int cmd_finetune_diffusion(int argc, char **argv) {
    const char *cmd = "finetune-diffusion";
    el_diffusion_train_params d = el_diffusion_train_default_params();
    el_diffusion_lora_params lp = el_diffusion_lora_default_params();
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
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(lp.base_path = cli_value(cmd, argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--task")) {
            if (!(lp.task = cli_value(cmd, argc, argv, &i))) goto done;
            if (!el_image_task_known(lp.task)) {
                cli_error(cmd, "--task: '%s' is not a task this version trains (%s)", lp.task,
                          el_image_task_names());
                goto done;
            }
        } else if (!strcmp(a, "--guidance")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_float(cmd, a, v, 0, 100, &x))
                goto done;
            lp.guidance = (float)x;
        } else if (!strcmp(a, "--distill")) {
            if (!(lp.teacher_path = cli_value(cmd, argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--profile")) {
            if (!(lp.profile_path = cli_value(cmd, argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--rank")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 256, &n)) goto done;
            lp.rank = (int32_t)n;
        } else if (!strcmp(a, "--alpha")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_float(cmd, a, v, 1e-6, 1e6, &x))
                goto done;
            lp.alpha = (float)x;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(cmd, argc, argv, &i))) goto done;
        } else {
            cli_error(cmd, "unknown option '%s'", a);
            goto done;
        }
    }
    if (o.p.n_train_files || o.p.n_eval_files || o.p.checkpoint_path || o.p.resume) {
        cli_error(cmd, "takes --images and --labels (not -f or --eval), and no checkpoints yet");
        goto done;
    }
    if (!lp.teacher_path != !lp.profile_path) {
        cli_error(cmd, "--distill and --profile go together");
        goto done;
    }
    if (!out || !lp.base_path || !d.images_path || !d.labels_path) {
        cli_error(cmd, "needs -m, --images, --labels and -o (see --help)");
        goto done;
    }
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    cli_diffusion_take_train_opts(&d, &o);
    el_status st = el_finetune_diffusion(&d, &lp, out);
    return cli_train_end(cmd, &o, st, out);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
