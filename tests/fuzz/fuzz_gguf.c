/* fuzz_gguf.c - libFuzzer entry: open any bytes as GGUF and touch everything the reader hands
 * out, so that ASan/UBSan catch a pointer or length that escapes the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"

static volatile uint8_t sink;

static void touch(const void *p, uint64_t n) {
    const uint8_t *b = p;
    if (n) sink ^= b[0] ^ b[n - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f;
    el_status st = gguf_open_memory(data, size, "fuzz", &f);
    if (st != EL_OK) {
        /* a refusal must be a clean one with a message naming the input */
        if ((st != EL_ERR_FORMAT && st != EL_ERR_UNSUPPORTED && st != EL_ERR_NOMEM) ||
            strncmp(el_last_error(), "fuzz: ", 6) != 0)
            __builtin_trap();
        return 0;
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kv[i];
        touch(kv->key.ptr, kv->key.len);
        if (kv->type == GGUF_TYPE_STRING) touch(kv->v.str.ptr, kv->v.str.len);
        if (kv->type != GGUF_TYPE_ARRAY) continue;
        if (kv->arr_type == GGUF_TYPE_STRING)
            for (uint64_t j = 0; j < kv->arr_n; j++) touch(kv->arr_str[j].ptr, kv->arr_str[j].len);
        else
            touch(kv->arr_data, kv->arr_n * gguf_value_size(kv->arr_type));
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(kv->key.len < 63 ? kv->key.len : 63), kv->key.ptr);
        const gguf_kv *found;
        (void)gguf_get_arr(f, key, kv->arr_type, &found);
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        touch(t->name.ptr, t->name.len);
        touch(t->data, t->nbytes);
    }
    uint32_t u32;
    gguf_str s;
    (void)gguf_get_u32(f, "general.alignment", &u32);
    (void)gguf_get_str(f, "general.architecture", &s);
    gguf_close(f);
    return 0;
}
