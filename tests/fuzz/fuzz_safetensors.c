/* fuzz_safetensors.c - libFuzzer entry point: el_st_open_memory on arbitrary bytes, then every
 * tensor's data is read and looked up by name, so that any range the validation let through
 * outside the buffer shows up under ASan. The buffer is copied to one of exactly its size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    el_st_file *f = NULL;
    if (el_st_open_memory(copy, size, "fuzz", &f) == EL_OK) {
        unsigned sum = 0;
        for (size_t i = 0; i < f->n_tensors; i++) {
            const el_st_tensor *t = &f->tensors[i], *got;
            const uint8_t *p = t->data;
            for (uint64_t k = 0; k < t->nbytes; k++) sum += p[k];
            if (strlen(t->name) == t->name_len && el_st_find(f, t->name) != t) __builtin_trap();
            (void)el_st_get(f, t->name, &got);
        }
        (void)el_st_metadata(f, "format");
        if (sum == 0xFFFFFFFFu) __builtin_trap(); /* keeps the reads */
        el_st_close(f);
    }
    free(copy);
    return 0;
}
