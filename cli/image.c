/* image.c - `edgelora image`: draws digits with the image model, one image or a grid, as a PNG;
 * with a task adapter and an input image and mask, fills the masked part. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora image -m MODEL.gguf -o OUT.png [options]\n"
    "Draws 28x28 digits with the image model (docs/vision.md) and writes them as a grey PNG:\n"
    "one image, or a grid of R x C samples from consecutive noise.\n"
    "  -m FILE               the image model (from `edgelora train-diffusion`)\n"
    "  --lora FILE           a task adapter (from `edgelora finetune-diffusion`)\n"
    "  --input FILE          inpainting: the 28x28 8-bit grey PNG to complete\n"
    "  --mask FILE           inpainting: a 28x28 8-bit grey PNG, non-zero where to fill\n"
    "  --class K             the digit to draw (default: any)\n"
    "  --guidance G          with --class: classifier-free guidance (default 1: the class\n"
    "                        alone; larger values follow the class more, at twice the cost)\n"
    "  --sampler S           ddim (default) or ddpm (every timestep)\n"
    "  --steps N             DDIM steps (default 20)\n"
    "  --seed N              the starting noise (default 1)\n"
    "  --grid R,C            R rows of C samples (default 1,1)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  -o FILE               the PNG to write\n";

enum { SIDE = 28, GAP = 2 };

/* A 28x28 grey PNG, or NULL after printing why not. */
static uint8_t *read_28(const char *cmd, const char *flag, const char *path) {
    uint8_t *px;
    int32_t w, h;
    el_status st = el_png_read_gray(path, &px, &w, &h);
    if (st != EL_OK) {
        cli_fail(cmd, st);
        return NULL;
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
               *mask = NULL;
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
    if (!input != !mask) {
        cli_error(cmd, "--input and --mask go together");
        return CLI_USAGE;
    }
    el_image_model *m;
    el_status st = el_image_model_load(model, &m);
    if (st != EL_OK) return cli_fail(cmd, st);
    el_image_adapter *ad = NULL;
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
    if (input) {
        if (!(in_px = read_28(cmd, "--input", input)) || !(mask_px = read_28(cmd, "--mask", mask)))
            goto fail;
        if (!ad || strcmp(el_image_adapter_task(ad), "inpaint"))
            fprintf(stderr, "edgelora image: warning: --input without an inpainting adapter "
                            "(--lora): the base model ignores the image\n");
        bool any = false;
        for (int k = 0; k < SIDE * SIDE; k++) any = any || mask_px[k];
        if (!any) {
            cli_error(cmd, "--mask %s: no pixel to fill (the mask is all zero)", mask);
            goto fail;
        }
    }
    p.adapter = ad, p.input = in_px, p.mask = mask_px;
    p.cls = (int32_t)cls;
    int32_t count = (int32_t)(rows * cols);
    int32_t w = (int32_t)(cols * SIDE + (cols - 1) * GAP),
            h = (int32_t)(rows * SIDE + (rows - 1) * GAP);
    uint8_t *img = malloc((size_t)count * SIDE * SIDE), *grid = calloc((size_t)w * (size_t)h, 1);
    if (!img || !grid) {
        cli_error(cmd, "out of memory");
        st = EL_ERR_NOMEM;
    } else if ((st = el_image_generate(m, &p, count, img)) == EL_OK) {
        for (int32_t k = 0; k < count; k++) {
            int32_t r = k / (int32_t)cols, c = k % (int32_t)cols;
            for (int y = 0; y < SIDE; y++)
                memcpy(grid + (size_t)(r * (SIDE + GAP) + y) * (size_t)w + c * (SIDE + GAP),
                       img + ((size_t)k * SIDE + y) * SIDE, SIDE);
        }
        st = el_png_write_gray(out, grid, w, h);
    }
    free(img);
    free(grid);
    if (st == EL_OK) {
        fprintf(stderr, "wrote %s (%d image%s)\n", out, count, count == 1 ? "" : "s");
        rc = CLI_OK;
    } else if (st != EL_ERR_NOMEM) {
        cli_fail(cmd, st);
    }
fail:
    free(in_px);
    free(mask_px);
    el_image_adapter_free(ad);
    el_image_model_free(m);
    return rc;
}
