/* fuzz_llama2c.c - libFuzzer entry: open any bytes as a llama2.c tokenizer and as a checkpoint,
 * and touch everything the readers hand out. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/llama2c.h"

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    llama2c_tokenizer *t;
    el_status st = llama2c_tokenizer_open_memory(data, size, "fuzz", &t);
    if (st == EL_OK) {
        for (int32_t i = 0; i < t->n_tokens; i++)
            sink ^=
                (uint8_t)t->tokens[i].text[0] ^ (uint8_t)t->tokens[i].text[t->tokens[i].len - 1];
        llama2c_tokenizer_close(t);
    } else if (st != EL_ERR_FORMAT || strncmp(el_last_error(), "fuzz: ", 6) != 0) {
        __builtin_trap();
    }
    /* the checkpoint reader wants 4-byte aligned data */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    llama2c_file *m;
    st = llama2c_open_memory(copy, size, "fuzz", &m);
    if (st == EL_OK) {
        const llama2c_config *c = &m->cfg;
        sink ^= (uint8_t)m->w.rms_final[c->dim - 1];
        sink ^= (uint8_t)m->w.wcls[(size_t)c->vocab_size * (size_t)c->dim - 1];
        llama2c_close(m);
    } else if ((st != EL_ERR_FORMAT && st != EL_ERR_UNSUPPORTED) ||
               strncmp(el_last_error(), "fuzz: ", 6) != 0) {
        __builtin_trap();
    }
    free(copy);
    return 0;
}
