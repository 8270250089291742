/* spec_tree.h - a request's "tree" field, as batch and serve read it (spec_tree.c): on its own,
 * so the request parsers' fuzzer links it without the rest of the command line. */
#ifndef EL_CLI_SPEC_TREE_H
#define EL_CLI_SPEC_TREE_H

#include <stdbool.h>

#include "edgelora-tools.h"

/* "auto" or a list of 1..EL_SPEC_MAX_DEPTH widths, each 1..8, into tree's tree_auto, n_depth and
 * width; false (tree partly written) if it is neither. */
bool cli_spec_tree_json(const el_json_value *t, el_spec_params *tree);

#endif
