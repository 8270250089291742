/* add_chat_template.c - gives a GGUF file edgelora's own chat template (tokenizer.chat_template,
 * src/runtime/chat.c), keeping every other key and tensor as it is. Made for the committed
 * default model, whose tokenizer and base predate the template (train-tokenizer now writes it,
 * and the trained models copy it from the tokenizer).
 * Build and run from the project's root, after make:
 *   cc -Iinclude -Isrc scripts/add_chat_template.c build/libedgelora.a -lm -pthread -o /tmp/act
 *   /tmp/act models/tokenizer.gguf && /tmp/act models/base.gguf */
#include <stdio.h>

#include "formats/gguf.h"
#include "runtime/chat.h"

int main(int argc, char **argv) {
    for (int a = 1; a < argc; a++) {
        gguf_file *g = NULL;
        el_status st = gguf_open(argv[a], &g);
        gguf_writer *w = st == EL_OK ? gguf_writer_create() : NULL;
        if (st == EL_OK && !w) st = EL_ERR_NOMEM;
        if (st == EL_OK) st = gguf_writer_copy_kv(w, g);
        if (st == EL_OK) st = gguf_writer_set_str(w, "tokenizer.chat_template", el_chat_edgelora_jinja);
        for (uint64_t i = 0; st == EL_OK && i < g->n_tensors; i++) {
            const gguf_tensor *t = &g->tensors[i];
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
            st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        }
        if (st == EL_OK) st = gguf_writer_write(w, argv[a]);
        gguf_writer_free(w);
        if (g) gguf_close(g);
        if (st != EL_OK) {
            fprintf(stderr, "%s: %s\n", argv[a], el_last_error());
            return 1;
        }
        printf("%s: chat template added\n", argv[a]);
    }
    return 0;
}
