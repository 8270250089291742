/* finetune.c - `edgelora finetune`: a LoRA adapter trained on prompt/response pairs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char finetune_help[] =
    "usage: edgelora finetune -m BASE.gguf --lora -f DATA.jsonl -o ADAPTER.gguf [options]\n"
    "Trains a LoRA adapter on prompt/response pairs, one JSON object per line:\n"
    "  {\"prompt\": \"...\", \"response\": \"...\"}\n"
    "The loss counts the response tokens (and the end-of-sequence token) only; the base model\n"
    "is frozen. Writes a GGUF adapter (llama.cpp's layout) that el_adapter_load reads and\n"
    "`edgelora merge` folds into a model, and the loss curves as an SVG beside it.\n"
    "  -m, --model FILE      the base model (llama architecture; quantized weights are fine)\n"
    "  --lora                train a LoRA adapter (the only method so far)\n"
    "  --rank R              rank of every adapted matrix (default 8)\n"
    "  --alpha A             scale numerator: terms are multiplied by A / R (default 2 R)\n"
    "  --targets LIST        comma-separated subset of q,k,v,o,gate,up,down (default q,k,v,o)\n"
    "  -c, --ctx N           tokens per example; longer ones are cut (default 128)\n"
    "  --peft DIR            also write a Hugging Face PEFT adapter folder\n"
    "  --qat                 quantization-aware: train against the base as its integer form\n"
    "                        computes (inputs the run time quantizes to int8 at static scales\n"
    "                        quantized so here); the base must have such scales (train --qat\n"
    "                        w4a8, or quantize --type w4a8 --calibrate) or --profile\n"
    "  --profile FILE        the base runs under this quantization profile; with --qat the\n"
    "                        adapter's terms are trained on its int8 grids, and the adapter\n"
    "                        written is for that profile\n"
    "  --teacher MODEL.gguf  distillation: the loss is KL(teacher || this model with the\n"
    "                        adapter) over the response tokens, in place of the cross-entropy;\n"
    "                        the teacher, of the base's vocabulary, runs in float (another\n"
    "                        shape or precision is fine: the float model for a quantized base)\n"
    "  --teacher-lora FILE   the adapter bound to the teacher\n"
    "  -o FILE               the adapter to write\n";

int cmd_finetune(int argc, char **argv) {
    cli_train_opts o = {.p = el_train_default_params()};
    el_lora_train_params lp = el_lora_train_default_params();
    const char *out = NULL;
    bool lora = false, have_alpha = false;
    long n;
    double x;
    int rc = CLI_USAGE;
    o.p.n_ctx = 128;
    o.p.lr = 1e-3f;
    o.p.weight_decay = 0.0f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_train_opt("finetune", &o, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(finetune_help, stdout);
            fputs(cli_train_opts_help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(lp.base_path = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--lora")) {
            lora = true;
        } else if (!strcmp(a, "--rank")) {
            if (!(v = cli_value("finetune", argc, argv, &i)) ||
                !cli_int("finetune", a, v, 1, 4096, &n))
                goto done;
            lp.rank = (int32_t)n;
        } else if (!strcmp(a, "--alpha")) {
            if (!(v = cli_value("finetune", argc, argv, &i)) ||
                !cli_float("finetune", a, v, 1e-6, 1e6, &x))
                goto done;
            lp.alpha = (float)x;
            have_alpha = true;
        } else if (!strcmp(a, "--targets")) {
            if (!(lp.targets = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) {
            if (!(v = cli_value("finetune", argc, argv, &i)) ||
                !cli_int("finetune", a, v, 2, 1 << 16, &n))
                goto done;
            o.p.n_ctx = (int32_t)n;
        } else if (!strcmp(a, "--qat")) {
            lp.qat = true;
        } else if (!strcmp(a, "--profile")) {
            if (!(lp.profile_path = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--teacher")) {
            if (!(lp.teacher_path = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--teacher-lora")) {
            if (!(lp.teacher_lora_path = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--peft")) {
            if (!(lp.peft_dir = cli_value("finetune", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("finetune", argc, argv, &i))) goto done;
        } else {
            cli_error("finetune", "unknown option '%s'", a);
            goto done;
        }
    }
    if (!lora) {
        cli_error("finetune", "give the method: --lora");
        goto done;
    }
    if (!out || o.p.n_train_files == 0) {
        cli_error("finetune", "needs -f and -o (see --help)");
        goto done;
    }
    if (!(lp.base_path = cli_model_path("finetune", lp.base_path))) goto done;
    if (!have_alpha)
        lp.alpha = 2.0f * (float)lp.rank;
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    el_status st = el_finetune_lora(&o.p, &lp, out);
    return cli_train_end("finetune", &o, st, out);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
