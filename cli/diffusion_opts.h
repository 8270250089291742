/* diffusion_opts.h - what the image model's commands share: for train-diffusion and
 * finetune-diffusion, the training options with the image model's defaults, the MNIST data
 * options, and the hand-over of the parsed options to the training parameters; for eval-image
 * and image-profile, the options of el_image_eval_params they both take. */
#ifndef EL_CLI_DIFFUSION_OPTS_H
#define EL_CLI_DIFFUSION_OPTS_H

#include "cli.h"

/* The common training options (cli_train_opt) with d's defaults. */
cli_train_opts cli_diffusion_train_opts(const el_diffusion_train_params *d);
/* --images, --labels, --heldout: 1 if argv[*i] was one of them (consumed), 0 if not, -1 on a
 * bad value. */
int cli_diffusion_data_opt(const char *cmd, el_diffusion_train_params *d, int argc, char **argv,
                           int *i);
/* Copies the parsed training options into d (after cli_train_begin). */
void cli_diffusion_take_train_opts(el_diffusion_train_params *d, const cli_train_opts *o);

/* --images, --labels, --heldout, --steps, --calib, --guidance, --seed, -t: 1 if argv[*i] was
 * one of them (consumed), 0 if not, -1 on a bad value. */
int cli_image_eval_opt(const char *cmd, el_image_eval_params *p, int argc, char **argv, int *i);

#endif
