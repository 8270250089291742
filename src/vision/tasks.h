/* tasks.h - the tasks the image model's adapters learn, and how each one fills the model's two
 * condition channels (the source image as the task shows it, and the mask of the pixels to
 * draw). The frozen graph is the same for every task; only what goes into those channels and
 * what the adapter learns to draw differ:
 *
 *   inpaint  fill (or remove what is in) a masked region: the source with the region blanked
 *   bold     stroke editing, thin strokes to bold: the source whole, drawn again with its
 *            strokes widened (a 3 x 3 grey dilation is the training target)
 *   upscale  a 14 x 14 image (given doubled, each pixel a 2 x 2 block) drawn at 28 x 28
 *   guide    class-guided drawing in one forward a step: no source; trained to predict what the
 *            base predicts with classifier-free guidance (two forwards a step) */
#ifndef EL_VISION_TASKS_H
#define EL_VISION_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "train/rng.h"

typedef struct el_vtask {
    const char *name;
    bool blanks_mask; /* the masked pixels of the source are hidden from the model */
    bool has_source;  /* the condition channels carry a source image (else they stay zero) */
    bool guided;      /* trained on the base's guided predictions for the image's class */
} el_vtask;

/* The task called name, or NULL. */
const el_vtask *el_vtask_find(const char *name);
/* "inpaint, bold, upscale, guide" */
const char *el_vtask_names(void);

/* A training (or evaluation) example of task t from the clean image x0 [784] in [-1, 1]: the
 * condition channels cond [2][784], the image the model should draw target [784], and the mask
 * [784] of the pixels it draws (1) or keeps (0). Inpainting's hole is drawn from rng. */
void el_vtask_example(const el_vtask *t, el_rng *rng, const float *x0, float *cond, float *target,
                      uint8_t *mask);

/* The condition channels cond [2][784] for a source image [784] (0..255) and the mask of the
 * pixels to draw (non-zero; NULL: all of them). */
void el_vtask_condition(const el_vtask *t, const uint8_t *source, const uint8_t *mask,
                        float *cond);

#endif
