/* test_batch_lora_gen.c - writes random GGUF LoRA adapters for a base model, for the shell tests
 * of `edgelora batch` and `edgelora adapters`:
 *   test_batch_lora_gen BASE.gguf OUT RANK TARGETS SEED AMP [ok|badarch|badshape|peft]
 * TARGETS is a comma list of q,k,v,o,gate,up,down; every block gets those. The layout is
 * llama.cpp's (convert_lora_to_gguf.py): "<weight>.lora_a" ne = [n_in, rank], ".lora_b"
 * ne = [rank, n_out], general.type = adapter, adapter.type = lora, adapter.lora.alpha = rank
 * (so alpha / rank = 1). A ~ U(-1,1)/sqrt(n_in) and B ~ U(-1,1)*AMP/sqrt(rank), so the term's
 * size relative to the input is about AMP. "badarch" claims another architecture, "badshape"
 * gives lora_a one input too many: adapters that must be refused. "peft" makes OUT a Hugging
 * Face PEFT folder (adapter_config.json with r = lora_alpha = RANK, adapter_model.safetensors
 * with PEFT's names, lora_A [rank, n_in] and lora_B [n_out, rank]) with the same numbers.
 * Run without arguments (as the test runner does), it checks its own output: an adapter for a
 * converted stories260K reads back with the keys and the shapes of the base's tensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "testutil.h"

static const struct {
    const char *flag, *gguf, *peft;
} targets[] = {
    {"q", "attn_q", "self_attn.q_proj"},   {"k", "attn_k", "self_attn.k_proj"},
    {"v", "attn_v", "self_attn.v_proj"},   {"o", "attn_output", "self_attn.o_proj"},
    {"gate", "ffn_gate", "mlp.gate_proj"}, {"up", "ffn_up", "mlp.up_proj"},
    {"down", "ffn_down", "mlp.down_proj"},
};
enum { N_TARGETS = sizeof targets / sizeof targets[0] };

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_sym(uint64_t *s) { /* uniform in [-1, 1) */
    return (float)((double)(rng_next(s) >> 11) * 0x1.0p-52 - 1.0);
}

/* Writes folder dir/ with adapter_config.json and the tensors added to w. */
static el_status write_peft(el_st_writer *w, const char *dir, int rank, const bool *want) {
    char path[1024];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return el_error(EL_ERR_IO, "%s: cannot create", path);
    fprintf(f, "{\"peft_type\": \"LORA\", \"r\": %d, \"lora_alpha\": %d, \"target_modules\": [",
            rank, rank);
    const char *sep = "";
    for (int k = 0; k < N_TARGETS; k++)
        if (want[k]) {
            fprintf(f, "%s\"%s\"", sep, strchr(targets[k].peft, '.') + 1);
            sep = ", ";
        }
    fprintf(f, "]}\n");
    if (fclose(f)) return el_error(EL_ERR_IO, "%s: write failed", path);
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    return el_st_writer_write(w, path);
}

/* Writes the adapter; returns 0 on success. */
static int write_adapter(const char *base, const char *out, int rank, const char *tlist,
                         uint64_t seed, float amp, const char *mode) {
    gguf_file *f;
    if (gguf_open(base, &f) != EL_OK) {
        fprintf(stderr, "%s\n", el_last_error());
        return 1;
    }
    bool want[N_TARGETS] = {0};
    char *list = strdup(tlist);
    for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < N_TARGETS && strcmp(t, targets[k].flag)) k++;
        if (k == N_TARGETS) {
            fprintf(stderr, "unknown target '%s'\n", t);
            free(list);
            gguf_close(f);
            return 1;
        }
        want[k] = true;
    }
    free(list);
    bool peft = !strcmp(mode, "peft");
    el_st_writer *sw = peft ? el_st_writer_create() : NULL;
    gguf_writer *w = gguf_writer_create();
    gguf_str arch = {0};
    gguf_get_str(f, "general.architecture", &arch);
    char arch_name[64];
    snprintf(arch_name, sizeof arch_name, "%.*s", (int)arch.len, arch.ptr);
    gguf_writer_set_str(w, "general.type", "adapter");
    gguf_writer_set_str(w, "general.architecture", strcmp(mode, "badarch") ? arch_name : "qwen2");
    gguf_writer_set_str(w, "adapter.type", "lora");
    gguf_writer_set_f32(w, "adapter.lora.alpha", (float)rank);
    float *bufs[2 * 64 * N_TARGETS];
    int n_bufs = 0, bad = 0;
    for (uint64_t i = 0; i < f->n_tensors && n_bufs + 2 <= (int)(sizeof bufs / sizeof *bufs);
         i++) {
        const gguf_tensor *t = &f->tensors[i];
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int il, used = 0, k = 0;
        char lin[32];
        if (sscanf(name, "blk.%d.%31[a-z_].weight%n", &il, lin, &used) != 2 ||
            (size_t)used != strlen(name))
            continue;
        while (k < N_TARGETS && strcmp(lin, targets[k].gguf)) k++;
        if (k == N_TARGETS || !want[k]) continue;
        int64_t n_in = t->ne[0] + (!strcmp(mode, "badshape") && !bad++), n_out = t->ne[1];
        int64_t ne_a[2] = {n_in, rank}, ne_b[2] = {rank, n_out};
        float *a = malloc((size_t)(n_in * rank) * sizeof *a);
        float *b = malloc((size_t)(rank * n_out) * sizeof *b);
        for (int64_t j = 0; j < n_in * rank; j++) a[j] = rng_sym(&seed) / sqrtf((float)n_in);
        for (int64_t j = 0; j < rank * n_out; j++) b[j] = rng_sym(&seed) * amp / sqrtf((float)rank);
        bufs[n_bufs++] = a;
        bufs[n_bufs++] = b;
        char na[160], nb[160];
        if (peft) { /* row-major shapes: the reverse of GGUF's ne */
            int64_t sa[2] = {rank, n_in}, sb[2] = {n_out, rank};
            const char *pre = "base_model.model.model.layers";
            snprintf(na, sizeof na, "%s.%d.%s.lora_A.weight", pre, il, targets[k].peft);
            snprintf(nb, sizeof nb, "%s.%d.%s.lora_B.weight", pre, il, targets[k].peft);
            el_st_writer_add(sw, na, EL_ST_F32, 2, sa, a, (uint64_t)(n_in * rank) * 4);
            el_st_writer_add(sw, nb, EL_ST_F32, 2, sb, b, (uint64_t)(rank * n_out) * 4);
            continue;
        }
        snprintf(na, sizeof na, "%s.lora_a", name);
        snprintf(nb, sizeof nb, "%s.lora_b", name);
        gguf_writer_add_tensor(w, na, 0 /* F32 */, 2, ne_a, a, (uint64_t)(n_in * rank) * 4);
        gguf_writer_add_tensor(w, nb, 0, 2, ne_b, b, (uint64_t)(rank * n_out) * 4);
    }
    el_status st = peft ? write_peft(sw, out, rank, want) : gguf_writer_write(w, out);
    el_st_writer_free(sw);
    if (st != EL_OK) fprintf(stderr, "%s\n", el_last_error());
    for (int i = 0; i < n_bufs; i++) free(bufs[i]);
    gguf_writer_free(w);
    gguf_close(f);
    return st != EL_OK;
}

static int test_roundtrip(void) {
    const char *bin = test_data_path("models/stories260K.bin"), *tok;
    if (!bin) return test_skip("models/stories260K.bin is absent");
    char bin_path[1024], base[1024], out[1024];
    snprintf(bin_path, sizeof bin_path, "%s", bin);
    tok = test_data_path("models/tok512.bin");
    if (!tok) return test_skip("models/tok512.bin is absent");
    snprintf(base, sizeof base, "%s/base.gguf", test_tmp_dir());
    snprintf(out, sizeof out, "%s/lora.gguf", test_tmp_dir());
    bin = bin_path;
    CHECK(el_convert_llama2c(bin, tok, base) == EL_OK);
    CHECK(write_adapter(base, out, 3, "q,down", 1, 0.5f, "ok") == 0);
    gguf_file *b, *a;
    CHECK(gguf_open(base, &b) == EL_OK);
    CHECK(gguf_open(out, &a) == EL_OK);
    gguf_str s;
    CHECK(gguf_get_str(a, "general.type", &s) == EL_OK && gguf_str_eq(s, "adapter"));
    CHECK(gguf_get_str(a, "adapter.type", &s) == EL_OK && gguf_str_eq(s, "lora"));
    float alpha;
    CHECK(gguf_get_f32(a, "adapter.lora.alpha", &alpha) == EL_OK && alpha == 3.0f);
    uint32_t n_layer;
    CHECK(gguf_get_u32(b, "llama.block_count", &n_layer) == EL_OK);
    CHECK(a->n_tensors == 4 * (uint64_t)n_layer); /* two targets, A and B each, every block */
    const gguf_tensor *q = gguf_find_tensor(b, "blk.0.attn_q.weight");
    const gguf_tensor *d = gguf_find_tensor(b, "blk.0.ffn_down.weight");
    const gguf_tensor *qa = gguf_find_tensor(a, "blk.0.attn_q.weight.lora_a");
    const gguf_tensor *db = gguf_find_tensor(a, "blk.0.ffn_down.weight.lora_b");
    CHECK(q && d && qa && db);
    CHECK(qa->ne[0] == q->ne[0] && qa->ne[1] == 3);
    CHECK(db->ne[0] == 3 && db->ne[1] == d->ne[1]);
    /* A's entries lie in [-1, 1) / sqrt(n_in) and are not all equal */
    const float *x = qa->data;
    float lim = 1.0f / sqrtf((float)q->ne[0]);
    bool in_range = true, varied = false;
    for (int64_t i = 0; i < qa->ne[0] * qa->ne[1]; i++) {
        in_range = in_range && fabsf(x[i]) <= lim;
        varied = varied || x[i] != x[0];
    }
    CHECK(in_range && varied);
    gguf_close(a);
    gguf_close(b);
    return TEST_PASS;
}

int main(int argc, char **argv) {
    if (argc == 1) {
        run_test("lora_gen_roundtrip", test_roundtrip);
        return tests_exit_code();
    }
    if (argc < 7 || argc > 8) {
        fprintf(stderr, "usage: %s BASE.gguf OUT RANK TARGETS SEED AMP "
                        "[ok|badarch|badshape|peft]\n", argv[0]);
        return 2;
    }
    return write_adapter(argv[1], argv[2], atoi(argv[3]), argv[4], strtoull(argv[5], NULL, 10),
                         (float)atof(argv[6]), argc == 8 ? argv[7] : "ok");
}
