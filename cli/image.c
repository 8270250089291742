/* image.c - `edgelora image`: draws digits with the image model, one image or a grid, as a PNG. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora image -m MODEL.gguf -o OUT.png [options]\n"
    "Draws 28x28 digits with the image model (docs/vision.md) and writes them as a grey PNG:\n"
    "one image, or a grid of R x C samples from consecutive noise.\n"
    "  -m FILE               the image model (from `edgelora train-diffusion`)\n"
    "  --class K             the digit to draw (default: any)\n"
    "  --sampler S           ddim (default) or ddpm (every timestep)\n"
    "  --steps N             DDIM steps (default 20)\n"
    "  --seed N              the starting noise (default 1)\n"
    "  --grid R,C            R rows of C samples (default 1,1)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  -o FILE               the PNG to write\n";

enum { SIDE = 28, GAP = 2 };

int cmd_image(int argc, char **argv) {
    const char *cmd = "image", *model = NULL, *out = NULL;
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
        } else if (!strcmp(a, "--class")) {
            if (!(v = cli_value(cmd, argc, argv, &i)) || !cli_int(cmd, a, v, 0, 1 << 20, &cls))
                return CLI_USAGE;
            have_class = true;
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
    el_image_model *m;
    el_status st = el_image_model_load(model, &m);
    if (st != EL_OK) return cli_fail(cmd, st);
    if (have_class && cls >= el_image_model_n_class(m)) {
        cli_error(cmd, "--class %ld: %s draws classes 0 to %d", cls, model,
                  el_image_model_n_class(m) - 1);
        el_image_model_free(m);
        return CLI_FAIL;
    }
    p.cls = (int32_t)cls;
    int32_t count = (int32_t)(rows * cols);
    int32_t w = (int32_t)(cols * SIDE + (cols - 1) * GAP), h = (int32_t)(rows * SIDE + (rows - 1) * GAP);
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
    el_image_model_free(m);
    if (st != EL_OK) return st == EL_ERR_NOMEM ? CLI_FAIL : cli_fail(cmd, st);
    fprintf(stderr, "wrote %s (%d image%s)\n", out, count, count == 1 ? "" : "s");
    return CLI_OK;
}
