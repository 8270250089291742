/* spec_tree.c - spec_tree.h. */
#include "spec_tree.h"

#include <string.h>

bool cli_spec_tree_json(const el_json_value *t, el_spec_params *tree) {
    el_json_kind k = el_json_type(t);
    size_t n = k == EL_JSON_ARRAY ? el_json_len(t) : 0;
    bool ok = (k == EL_JSON_STRING && !strcmp(el_json_str(t, NULL), "auto")) ||
              (n >= 1 && n <= EL_SPEC_MAX_DEPTH);
    for (size_t d = 0; ok && d < n; d++) {
        int64_t w;
        ok = el_json_int(el_json_at(t, d), &w) && w >= 1 && w <= 8;
        tree->width[d] = (int32_t)w;
    }
    tree->tree_auto = k == EL_JSON_STRING;
    tree->n_depth = (int32_t)n;
    return ok;
}
