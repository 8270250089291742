/* train_tokenizer.c - `edgelora train-tokenizer`: a byte-level BPE vocabulary from text files. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora train-tokenizer -f FILE... --vocab-size N -o TOK.gguf\n"
    "Trains a byte-level BPE vocabulary (GPT-2 style: 256 byte tokens, N - 258 merges, and the\n"
    "control tokens <|bos|> and <|eos|>) over the text files and writes it as a vocabulary-only\n"
    "GGUF (tokenizer.ggml.model gpt2, pre-tokenizer gpt-2) that every command taking -m reads.\n"
    "  -f FILE...        training text (several files may follow one -f)\n"
    "  --vocab-size N    tokens in the vocabulary, 258 or more\n"
    "  -o FILE           the vocabulary to write\n";

/* What the file holds, read back from it: a text with few distinct pairs gives fewer merges
 * than asked for. */
static int report_written(const char *out, long asked) {
    el_model_params mp = el_model_default_params();
    mp.vocab_only = true;
    el_model *m;
    el_status st = el_model_load(out, &mp, &m);
    if (st != EL_OK) return cli_fail("train-tokenizer", st);
    el_model_info info;
    el_model_get_info(m, &info);
    el_model_free(m);
    long merges = info.n_vocab - 258L;
    fprintf(stderr, "wrote %s (%d tokens: 256 bytes, %ld merges, 2 special)\n", out,
            info.n_vocab, merges);
    if (info.n_vocab < asked)
        fprintf(stderr, "edgelora train-tokenizer: warning: %ld tokens were asked for; the text "
                "has no more pairs to merge\n", asked);
    return CLI_OK;
}

int cmd_train_tokenizer(int argc, char **argv) {
    const char **files = NULL, *out = NULL;
    int32_t n_files = 0;
    long vocab = 0;
    int rc = CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "-f")) {
            int start = i + 1;
            while (i + 1 < argc && argv[i + 1][0] != '-')
                i++;
            if (i + 1 == start) {
                cli_error("train-tokenizer", "-f needs at least one file");
                goto done;
            }
            const char **l = realloc(files, (size_t)(n_files + i + 1 - start) * sizeof *l);
            if (!l) goto done;
            files = l;
            for (int k = start; k <= i; k++)
                files[n_files++] = argv[k];
        } else if (!strcmp(a, "--vocab-size")) {
            if (!(v = cli_value("train-tokenizer", argc, argv, &i)) ||
                !cli_int("train-tokenizer", a, v, 258, 1 << 24, &vocab))
                goto done;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("train-tokenizer", argc, argv, &i))) goto done;
        } else {
            cli_error("train-tokenizer", "unknown option '%s'", a);
            goto done;
        }
    }
    if (!n_files || !vocab || !out) {
        cli_error("train-tokenizer", "needs -f, --vocab-size and -o (see --help)");
        goto done;
    }
    el_status st = el_train_tokenizer(files, n_files, (int32_t)vocab, out);
    rc = st ? cli_fail("train-tokenizer", st) : report_written(out, vocab);
done:
    free(files);
    return rc;
}
