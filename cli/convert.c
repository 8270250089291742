/* convert.c - `edgelora convert`: other model formats to GGUF. A directory is a Hugging Face
 * model folder, or a PEFT adapter folder when it has adapter_config.json; a file is a llama2.c
 * checkpoint. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora convert HF_DIR -o OUT.gguf [--type T]\n"
    "       edgelora convert MODEL.bin --tokenizer TOKENIZER.bin -o OUT.gguf\n"
    "       edgelora convert PEFT_DIR [-m BASE] -o ADAPTER.gguf\n"
    "\n"
    "HF_DIR is a Hugging Face model folder: config.json (LlamaForCausalLM, MistralForCausalLM,\n"
    "Qwen2ForCausalLM, Qwen3ForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM),\n"
    "model.safetensors or shards with model.safetensors.index.json (F32, F16 or BF16),\n"
    "tokenizer.json and tokenizer_config.json. It becomes one GGUF file with the names,\n"
    "layouts and metadata of llama.cpp's converter, so llama.cpp can load it too.\n"
    "  --type T   type of the weight matrices: f32, f16 (default), bf16, q8_0, q4_0, q4_k,\n"
    "             q6_k, or edgelora's own w8 (w8a8), w4 (w4a8), w4g32, w4g64, w4g128, w8a16\n"
    "             (which llama.cpp cannot read); norms and biases stay f32\n"
    "\n"
    "MODEL.bin is a llama2.c checkpoint; with its tokenizer it becomes a GGUF file (architecture\n"
    "llama, F32 weights, a SentencePiece-style vocabulary).\n"
    "\n"
    "PEFT_DIR is a Hugging Face PEFT LoRA folder (adapter_config.json, adapter_model.safetensors)\n"
    "for BASE (default: the default model), which it is checked against. It becomes a GGUF LoRA\n"
    "adapter in llama.cpp's layout (F32; B scaled so that alpha / rank gives PEFT's factor, also\n"
    "for rsLoRA and rank or alpha patterns), for llama.cpp's --lora as for ours.\n"
    "\n"
    "The output is written to a temporary file and renamed, so a failure leaves no partial file.\n"
    "On a terminal, progress (tensors, MB/s, ETA) is shown on standard error.\n";

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_peft_dir(const char *dir) {
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    return stat(path, &sb) == 0;
}

/* A PEFT folder to a GGUF adapter, checked against the base model. */
static int convert_peft(const char *dir, const char *base, const char *out) {
    cli_model_opts mo = {.model = base};
    el_model *m;
    int rc = cli_load_model("convert", &mo, false, &m);
    if (rc) return rc;
    el_adapter *ad = NULL;
    el_status st = el_adapter_load_exact(m, dir, &ad);
    if (st == EL_OK) st = el_adapter_save(ad, out);
    el_adapter_free(ad);
    el_model_free(m);
    if (st != EL_OK) return cli_fail("convert", st);
    fprintf(stderr, "edgelora convert: wrote %s\n", out);
    return CLI_OK;
}

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *tokenizer = NULL, *out = NULL, *type = NULL, *base = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--tokenizer")) {
            if (!(tokenizer = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(base = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "--type")) {
            if (!(type = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("convert", argc, argv, &i))) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            cli_error("convert", "unknown option '%s'", a);
            return CLI_USAGE;
        } else if (in) {
            cli_error("convert", "one input at a time ('%s' and '%s')", in, a);
            return CLI_USAGE;
        } else {
            in = a;
        }
    }
    if (!in || !out) {
        cli_error("convert", "needs an input and -o (see --help)");
        return CLI_USAGE;
    }
    if (!exists(in)) {
        cli_error("convert", "%s: no such file or folder", in);
        return CLI_FAIL;
    }
    bool peft = is_dir(in) && is_peft_dir(in);
    if (peft && (tokenizer || type)) {
        cli_error("convert", "a PEFT adapter takes only -m BASE and -o (see --help)");
        return CLI_USAGE;
    }
    if (peft) return convert_peft(in, base, out);
    if (base) {
        cli_error("convert", "-m is for PEFT adapter folders (%s has no adapter_config.json)", in);
        return CLI_USAGE;
    }
    el_status st;
    if (is_dir(in)) {
        if (tokenizer) {
            cli_error("convert", "--tokenizer is for llama2.c checkpoints; a Hugging Face folder "
                      "has its tokenizer.json");
            return CLI_USAGE;
        }
        bool readable = true;
        if (type && el_quantize_type_check(type, &readable) == EL_OK && !readable)
            fprintf(stderr, "edgelora convert: warning: %s is an edgelora type; llama.cpp cannot "
                    "read %s\n", type, out);
        cli_progress pr;
        cli_progress_start(&pr);
        st = el_convert_hf(in, out, type, cli_progress_update, &pr);
        double t = cli_progress_end(&pr);
        if (st != EL_OK) return cli_fail("convert", st);
        fprintf(stderr, "edgelora convert: wrote %s (%.1f MB in %.2f s, %.1f MB/s)\n", out,
                (double)pr.bytes / 1e6, t, t > 0 ? (double)pr.bytes / 1e6 / t : 0.0);
        return CLI_OK;
    }
    if (type) {
        cli_error("convert", "--type is for Hugging Face folders; llama2.c checkpoints are "
                  "written as f32");
        return CLI_USAGE;
    }
    /* without --tokenizer too: the library says first whether in is a checkpoint at all */
    st = el_convert_llama2c(in, tokenizer, out);
    if (st == EL_ERR_INVALID_ARG && !tokenizer) {
        cli_error("convert", "%s; give it with --tokenizer FILE", el_last_error());
        return CLI_USAGE;
    }
    if (st != EL_OK) return cli_fail("convert", st);
    fprintf(stderr, "edgelora convert: wrote %s\n", out);
    return CLI_OK;
}
