/* tasks.c - the image adapters' tasks (see tasks.h). */
#include "vision/tasks.h"

#include <string.h>

#include "edgelora-tools.h"

enum { SIDE = 28, PIX = SIDE * SIDE };

static const el_vtask tasks[] = {
    {"inpaint", true, true, false},
    {"bold", false, true, false},
    {"upscale", false, true, false},
    {"guide", false, false, true},
};

const el_vtask *el_vtask_find(const char *name) {
    for (size_t i = 0; name && i < sizeof tasks / sizeof *tasks; i++)
        if (!strcmp(tasks[i].name, name)) return &tasks[i];
    return NULL;
}

const char *el_vtask_names(void) { return "inpaint, bold, upscale, guide"; }

bool el_image_task_known(const char *name) { return el_vtask_find(name) != NULL; }

const char *el_image_task_names(void) { return el_vtask_names(); }

bool el_image_task_takes_source(const char *name) {
    const el_vtask *t = el_vtask_find(name);
    return t && t->has_source;
}

/* A hole of 8 to 18 pixels a side at a random place. */
static void random_hole(el_rng *rng, uint8_t *mask) {
    int h = 8 + (int)(el_rng_u64(rng) % 11), w = 8 + (int)(el_rng_u64(rng) % 11);
    int y0 = (int)(el_rng_u64(rng) % (uint64_t)(SIDE - h + 1));
    int x0 = (int)(el_rng_u64(rng) % (uint64_t)(SIDE - w + 1));
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            mask[y * SIDE + x] = y >= y0 && y < y0 + h && x >= x0 && x < x0 + w;
}

/* The largest value of each pixel's 3 x 3 neighbourhood. */
static void dilate(const float *x, float *y) {
    for (int r = 0; r < SIDE; r++)
        for (int c = 0; c < SIDE; c++) {
            float m = -1.0f;
            for (int dr = -1; dr <= 1; dr++)
                for (int dc = -1; dc <= 1; dc++) {
                    int rr = r + dr, cc = c + dc;
                    if (rr >= 0 && rr < SIDE && cc >= 0 && cc < SIDE && x[rr * SIDE + cc] > m)
                        m = x[rr * SIDE + cc];
                }
            y[r * SIDE + c] = m;
        }
}

/* Each 2 x 2 block replaced by its mean: the image at 14 x 14, shown at 28 x 28. */
static void blocks(const float *x, float *y) {
    for (int r = 0; r < SIDE; r += 2)
        for (int c = 0; c < SIDE; c += 2) {
            const float *s = x + r * SIDE + c;
            float m = 0.25f * (s[0] + s[1] + s[SIDE] + s[SIDE + 1]);
            float *d = y + r * SIDE + c;
            d[0] = d[1] = d[SIDE] = d[SIDE + 1] = m;
        }
}

void el_vtask_example(const el_vtask *t, el_rng *rng, const float *x0, float *cond, float *target,
                      uint8_t *mask) {
    if (!t->has_source) { /* the image itself is what is drawn, from nothing but its class */
        memset(cond, 0, 2 * PIX * sizeof *cond);
        memcpy(target, x0, PIX * sizeof *target);
        memset(mask, 1, PIX);
        return;
    }
    if (t->blanks_mask)
        random_hole(rng, mask);
    else
        memset(mask, 1, PIX);
    if (!strcmp(t->name, "bold")) {
        memcpy(cond, x0, PIX * sizeof *cond);
        dilate(x0, target);
    } else if (!strcmp(t->name, "upscale")) {
        blocks(x0, cond);
        memcpy(target, x0, PIX * sizeof *target);
    } else {
        memcpy(cond, x0, PIX * sizeof *cond);
        memcpy(target, x0, PIX * sizeof *target);
    }
    for (int i = 0; i < PIX; i++) {
        if (t->blanks_mask && mask[i]) cond[i] = 0.0f; /* mid-grey: nothing known */
        cond[PIX + i] = mask[i] ? 1.0f : 0.0f;
    }
}

void el_vtask_condition(const el_vtask *t, const uint8_t *source, const uint8_t *mask,
                        float *cond) {
    for (int i = 0; i < PIX && !t->has_source; i++) cond[i] = cond[PIX + i] = 0.0f;
    for (int i = 0; i < PIX && t->has_source; i++) {
        bool draw = !mask || mask[i];
        cond[i] = t->blanks_mask && draw ? 0.0f : (float)source[i] / 127.5f - 1.0f;
        cond[PIX + i] = draw ? 1.0f : 0.0f;
    }
}
