/* chat-check.c - our chat templates against llama.cpp's own template code: for each template
 * (a name, or a Jinja file a model ships), the same conversations through
 * llama_chat_apply_template and el_chat_apply must give the same text, and that text the same
 * token ids from llama.cpp's tokenizer and ours on the given vocabulary. With --golden, prints
 * llama.cpp's texts of the named templates in the form tests/golden/chat/templates.txt keeps.
 * Built and run by chat-check.sh against libllama (built by build-llama-bench.sh) and
 * libedgelora.
 * Usage: chat-check VOCAB.gguf TEMPLATE...   or   chat-check --golden NAME... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelora.h"
#include "llama.h"

typedef struct conversation {
    const char *label;
    int n;
    const char *role[6], *content[6];
} conversation;

/* Turns that exercise what the templates differ in: a system message, white space to trim, a
 * finished assistant turn, a line break inside a message. */
static const conversation convs[] = {
    {"single", 1, {"user"}, {"Hello"}},
    {"system", 2, {"system", "user"}, {"You are a helpful assistant.", "Hello"}},
    {"multi", 4, {"system", "user", "assistant", "user"},
     {"  Be brief.  ", "Hello", "  Hi there!  ", "What is 2+2?\nAnswer with a number."}},
    {"no-system", 3, {"user", "assistant", "user"}, {"One", "Two", "Three"}},
};

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* llama.cpp's text of c with tmpl, malloc'd, or NULL if it does not know the template. */
static char *theirs(const char *tmpl, const conversation *c, bool add) {
    llama_chat_message m[6];
    for (int i = 0; i < c->n; i++) m[i] = (llama_chat_message){c->role[i], c->content[i]};
    int32_t need = llama_chat_apply_template(tmpl, m, (size_t)c->n, add, NULL, 0);
    if (need < 0) return NULL;
    char *s = calloc((size_t)need + 1, 1);
    llama_chat_apply_template(tmpl, m, (size_t)c->n, add, s, need + 1);
    return s;
}

static void print_escaped(const char *s) {
    for (; *s; s++) {
        if (*s == '\n') fputs("\\n", stdout);
        else if (*s == '\\') fputs("\\\\", stdout);
        else if (*s == '\t') fputs("\\t", stdout);
        else putchar(*s);
    }
}

static int golden(int argc, char **argv) {
    for (int a = 2; a < argc; a++)
        for (size_t k = 0; k < sizeof convs / sizeof convs[0]; k++)
            for (int add = 0; add <= 1; add++) {
                char *t = theirs(argv[a], &convs[k], add);
                if (!t) {
                    fprintf(stderr, "llama.cpp does not know %s\n", argv[a]);
                    return 1;
                }
                printf("%s\t%s\t%d\t", argv[a], convs[k].label, add);
                print_escaped(t);
                putchar('\n');
                free(t);
            }
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "--golden") == 0) return golden(argc, argv);
    if (argc < 3) {
        fprintf(stderr, "usage: chat-check VOCAB.gguf TEMPLATE...\n");
        return 2;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *lm = llama_model_load_from_file(argv[1], mp);
    el_model *em = NULL;
    el_model_params ep = el_model_default_params();
    ep.vocab_only = true;
    if (!lm || el_model_load(argv[1], &ep, &em) != EL_OK) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(lm);
    int failed = 0;
    for (int a = 2; a < argc; a++) {
        char *file = read_file(argv[a]);
        const char *tmpl = file ? file : argv[a];
        const char *family = NULL;
        el_status st = el_chat_template_family(NULL, tmpl, &family);
        int cases = 0, bad = 0;
        for (size_t k = 0; k < sizeof convs / sizeof convs[0]; k++)
            for (int add = 0; add <= 1; add++) {
                char *t = theirs(tmpl, &convs[k], add), *o = NULL;
                el_chat_message m[6];
                for (int i = 0; i < convs[k].n; i++) m[i] = (el_chat_message){convs[k].role[i], convs[k].content[i]};
                el_status sto = el_chat_apply(NULL, tmpl, m, (size_t)convs[k].n, add, &o);
                cases++;
                if (!t || sto != EL_OK || strcmp(t, o) != 0) {
                    bad++;
                    if (bad == 1) {
                        printf("  %s %s add=%d: llama.cpp [", argv[a], convs[k].label, add);
                        print_escaped(t ? t : "(unknown template)");
                        printf("]\n  ours [");
                        print_escaped(sto == EL_OK ? o : el_last_error());
                        printf("]\n");
                    }
                } else {
                    int32_t lt[4096];
                    int32_t nl = llama_tokenize(vocab, t, (int32_t)strlen(t), lt, 4096, true, true);
                    int32_t et[4096];
                    size_t ne = 0;
                    el_status stt = el_tokenize(em, o, strlen(o), true, true, et, 4096, &ne);
                    if (nl < 0 || stt != EL_OK || (size_t)nl != ne || memcmp(lt, et, ne * 4) != 0) {
                        bad++;
                        printf("  %s %s add=%d: token ids differ (%d and %zu tokens)\n", argv[a],
                               convs[k].label, add, nl, ne);
                    }
                }
                free(t), free(o);
            }
        printf("%s %s (%s): %d of %d conversations give llama.cpp's text and ids\n",
               bad ? "FAIL" : "PASS", argv[a], st == EL_OK ? family : "not recognized",
               cases - bad, cases);
        failed += bad > 0;
        free(file);
    }
    el_model_free(em);
    llama_model_free(lm);
    return failed ? 1 : 0;
}
