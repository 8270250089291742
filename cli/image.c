/* image.c - `edgelora image`: draws digits with the image model, one image or a grid, as a PNG;
 * with a task adapter and an input image (and a mask), runs the task on it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora image -m MODEL.gguf -o OUT.png [options]\n"
    "Draws 28x28 digits with the image model (docs/vision.md) and writes them as a grey PNG:\n"
    "one image, or a grid of R x C samples from consecutive noise.\n"
    "  -m FILE               the image model (from `edgelora train-diffusion`)\n"
    "  --profile FILE        draw with the integer model of this profile (from `edgelora\n"
    "                        image-profile`: W8A16 or W8A8)\n"
    "  --lora FILE           a task adapter (from `edgelora finetune-diffusion`): inpaint,\n"
    "                        bold (stroke editing), upscale, or guide (with --class: guided\n"
    "                        drawing at the cost of one forward a step)\n"
    "  --input FILE          the 28x28 8-bit grey PNG the task works on (upscale: 14x14 too,\n"
    "                        doubled)\n"
    "  --mask FILE           a 28x28 8-bit grey PNG, non-zero where to draw; the rest is kept\n"
    "                        (inpaint needs it; bold and upscale redraw all without it)\n"
    "  --class K             the digit to draw (default: any)\n"
    "  --guidance G          with --class: classifier-free guidance (default 1: the class\n"
    "                        alone; larger values follow the class more, at twice the cost)\n"
    "  --sampler S           ddim (default) or ddpm (every timestep)\n"
    "  --steps N             DDIM steps (default 20)\n"
    "  --seed N              the starting noise (default 1)\n"
    "  --grid R,C            R rows of C samples (default 1,1)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  -o FILE               the PNG to write\n";

enum { SIDE = 28 };

/* A 28x28 grey PNG (or, with half_ok, a 14x14 one doubled), or NULL after printing why not. */
static uint8_t *read_28(const char *cmd, const char *flag, const char *path, bool half_ok) {
    uint8_t *px;
    int32_t w, h;
    el_status st = el_png_read_gray(path, &px, &w, &h);
    if (st != EL_OK) {
        cli_fail(cmd, st);
        return NULL;
    }
    if (half_ok && w == SIDE / 2 && h == SIDE / 2) {
        uint8_t *big = malloc(SIDE * SIDE);
        for (int y = 0; big && y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) big[y * SIDE + x] = px[(y / 2) * (SIDE / 2) + x / 2];
        free(px);
        if (!big) cli_error(cmd, "out of memory");
        return big;
    }
    if (w != SIDE || h != SIDE) {
        cli_error(cmd, "%s %s: %dx%d pixels; the image model takes %dx%d", flag, path, w, h, SIDE,
                  SIDE);
        free(px);
        return NULL;
    }
    return px;
}

int cmd_image(int argc, char **argv) {
    const char *cmd = "image", *model = NULL, *out = NULL, *lora = NULL, *input = NULL,
               *mask = NULL, *profile = NULL;
    el_image_params p = el_image_default_params();
    long rows = 1, cols = 1, n;
    bool have_class = false;
    long cls = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--lora")) {
            if (!(lora = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--profile")) {
            if (!(profile = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--input")) {
            if (!(input = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--mask")) {
            if (!(mask = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--class")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 0, 1 << 20, &cls))
                return CLI_USAGE;
            have_class = true;
        } else if (!strcmp(a, "--guidance")) {
            double g;
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_float(cmd, a, v, 0, 100, &g))
                return CLI_USAGE;
            p.guidance = (float)g;
        } else if (!strcmp(a, "--sampler")) {
            if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
            if (!strcmp(v, "ddim")) {
                p.sampler = EL_IMAGE_DDIM;
            } else if (!strcmp(v, "ddpm")) {
                p.sampler = EL_IMAGE_DDPM;
            } else {
                cli_error(cmd, "--sampler: '%s' is neither ddim nor ddpm", v);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--steps")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1 << 20, &n))
                return CLI_USAGE;
            p.n_steps = (int32_t)n;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_u64(cmd, a, v, &p.seed))
                return CLI_USAGE;
        } else if (!strcmp(a, "--grid")) {
            if (!(v = cli_value(cmd, argc, argv, &i))) return CLI_USAGE;
            int used = 0;
            if (sscanf(v, "%ld,%ld%n", &rows, &cols, &used) != 2 || v[used] || rows < 1 ||
                cols < 1 || rows > 64 || cols > 64) {
                cli_error(cmd, "--grid: '%s' is not R,C with 1 <= R, C <= 64", v);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 1, 1024, &n))
                return CLI_USAGE;
            p.n_threads = (int32_t)n;
        } else {
            cli_error(cmd, "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!model || !out) {
        cli_error(cmd, "needs -m and -o (see --help)");
        return CLI_USAGE;
    }
    if (mask && !input) {
        cli_error(cmd, "--mask needs --input");
        return CLI_USAGE;
    }
    el_image_model *m;
    el_status st = el_image_model_load(model, &m);
    if (st != EL_OK) return cli_fail(cmd, st);
    el_image_adapter *ad = NULL;
    el_image_profile *prof = NULL;
    uint8_t *in_px = NULL, *mask_px = NULL;
    int rc = CLI_FAIL;
    if (have_class && cls >= el_image_model_n_class(m)) {
        cli_error(cmd, "--class %ld: %s draws classes 0 to %d", cls, model,
                  el_image_model_n_class(m) - 1);
        goto fail;
    }
    if (lora && (st = el_image_adapter_load(m, lora, &ad)) != EL_OK) {
        cli_fail(cmd, st);
        goto fail;
    }
    if (profile && (st = el_image_profile_load(m, profile, &prof)) != EL_OK) {
        cli_fail(cmd, st);
        goto fail;
    }
    const char *task = ad ? el_image_adapter_task(ad) : NULL;
    if (input && !ad) {
        cli_error(cmd, "--input needs a task adapter (--lora): the base model draws from noise");
        goto fail;
    }
    if (input && !el_image_task_takes_source(task)) {
        cli_error(cmd, "--lora %s (task %s) draws from noise: it takes no --input", lora, task);
        goto fail;
    }
    if (input && !mask && !strcmp(task, "inpaint")) {
        cli_error(cmd, "--lora %s inpaints: it needs --mask, the pixels to fill", lora);
        goto fail;
    }
    if (input && !(in_px = read_28(cmd, "--input", input, !strcmp(task, "upscale"))))
        goto fail;
    if (mask) {
        if (!(mask_px = read_28(cmd, "--mask", mask, false))) goto fail;
        bool any = false;
        for (int k = 0; k < SIDE * SIDE; k++) any = any || mask_px[k];
        if (!any) {
            cli_error(cmd, "--mask %s: no pixel to draw (the mask is all zero)", mask);
            goto fail;
        }
    }
    if (ad && !input && el_image_task_takes_source(task))
        fprintf(stderr, "edgelora image: warning: --lora %s (task %s) without --input: it draws "
                        "from an empty source\n", lora, task);
    p.adapter = ad, p.input = in_px, p.mask = mask_px, p.profile = prof;
    p.cls = (int32_t)cls;
    int32_t count = (int32_t)(rows * cols);
    uint8_t *img = malloc((size_t)count * SIDE * SIDE);
    if (!img)
        cli_error(cmd, "out of memory");
    else if ((st = el_image_generate(m, &p, count, img)) != EL_OK)
        cli_fail(cmd, st);
    else if (cli_write_image_grid(cmd, out, img, (int32_t)rows, (int32_t)cols))
        rc = CLI_OK;
    free(img);
    if (rc == CLI_OK) fprintf(stderr, "wrote %s (%d image%s)\n", out, count, count == 1 ? "" : "s");
fail:
    free(in_px);
    free(mask_px);
    el_image_adapter_free(ad);
    el_image_profile_free(prof);
    el_image_model_free(m);
    return rc;
}
