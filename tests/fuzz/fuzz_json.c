/* fuzz_json.c - libFuzzer entry point: el_json_parse on arbitrary bytes, then a walk over every
 * value and a write of every string, so that any out-of-bounds access in the tree shows up. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "formats/json.h"

static size_t walk(const el_json_value *v, FILE *out) {
    size_t n = 1, len;
    int64_t i;
    double d;
    bool b;
    const char *s = el_json_str(v, &len);
    if (s) el_json_write_string(out, s, len);
    (void)el_json_int(v, &i);
    (void)el_json_num(v, &d);
    (void)el_json_bool(v, &b);
    for (size_t k = 0; k < el_json_len(v); k++) {
        const char *key = el_json_key_at(v, k, &len);
        if (key) {
            el_json_write_string(out, key, len);
            /* every key without a NUL in it is found */
            if (strlen(key) == len && el_json_get(v, key) == NULL) __builtin_trap();
        }
        n += walk(el_json_at(v, k), out);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    el_json_doc *doc = NULL;
    if (el_json_parse((const char *)data, size, "fuzz", &doc) == EL_OK) {
        /* every value holds at least one input byte */
        if (walk(el_json_root(doc), sink) > size) __builtin_trap();
        el_json_free(doc);
    }
    return 0;
}
