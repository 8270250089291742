/* compress.c - `edgelora compress`: UniQL's one-shot compression of a model (docs/uniql.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: edgelora compress -m MODEL.gguf -f CALIB.txt -o OUT.gguf [--rates R0,R1,...]\n"
    "                         [--type TYPE] [--group N] [--calib-tokens N] [--no-sort-qk] [-t N]\n"
    "                         [--finetune STEPS [--finetune-text FILE] ...]\n"
    "                         [--lora ADAPTER.gguf ... --lora-out DIR]\n"
    "Runs MODEL over calibration text, sorts every block's channels by importance (MLP by\n"
    "ridge leverage scores, V/O by a weighted SVD, Q/K by RoPE pairs) so that\n"
    "pruning a rate keeps a prefix of every matrix, quantizes every weight by GPTQ and writes\n"
    "OUT in the UniQL layout with the rates it supports (docs/uniql.md; run it with --prune).\n"
    "OUT is written only when complete.\n"
    "  -m, --model FILE     the model (GGUF, float or quantized, with a tokenizer)\n"
    "  -f, --file FILE      calibration text (hold out the text you evaluate on)\n"
    "  --calib-tokens N     its first N tokens (default 8192; at least 256)\n"
    "  --rates LIST         global pruning rates OUT supports, ascending from 0, below 0.9\n"
    "                       (default 0,0.05,0.1,0.15,0.2,0.25,0.3,0.35)\n"
    "  --type TYPE          q4_0 (default), w4g32, w4g64, w4g128 (GPTQ), or f16 / f32 (sorting\n"
    "                       alone)\n"
    "  --group N            the GPTQ group: 32 (q4_0), 64 (w4g64), 128 (w4g128)\n"
    "  --head-type TYPE     the output head (and a tied token embedding): TYPE's (default,\n"
    "                       GPTQ) or q8_0 (round to nearest), as llama.cpp keeps a head wider\n"
    "  --no-sort-qk         leave Q/K in order (then not pruned), so that the --sorted model\n"
    "                       runs exactly in any engine (sorted Q/K need RoPE with index)\n"
    "  --sorted FILE        also keep the sorted model, before the UniQL layout: an ordinary\n"
    "                       GGUF of the original shapes (what --slice reads)\n"
    "  -t, --threads N      threads (default: all cores)\n"
    "  --finetune STEPS     masked LoRA fine-tuning between sorting and GPTQ: each step draws\n"
    "                       one of the rates and masks what it drops, the adapter (every\n"
    "                       linear) learns from the original model's outputs (distillation)\n"
    "                       and is merged into the weights, so every rate recovers quality\n"
    "  --finetune-text FILE its text (default: the calibration text; hold out what you\n"
    "                       evaluate on)\n"
    "  --finetune-rank N    the adapter's rank (default 16)\n"
    "  --finetune-lr LR     peak learning rate (default 0.001; cosine to a tenth)\n"
    "  --finetune-ctx N     tokens per sequence (default 128)\n"
    "  --finetune-batch N   sequences per step (default 8)\n"
    "  --finetune-plot FILE an SVG of its loss curve\n"
    "  --finetune-adapter FILE  also keep the adapter before its merge (a LoRA GGUF of the\n"
    "                       sorted model that compress writes without --finetune)\n"
    "  --seed N             the adapter's initialization, data order and drawn rates (1)\n"
    "  --lora FILE          an adapter of MODEL (repeatable) re-expressed for the output: its\n"
    "                       rows and columns follow the sorting, so it computes on OUT what it\n"
    "                       computed on MODEL; written as DIR/<name>.gguf, for OUT alone\n"
    "  --lora-out DIR       the folder of those adapters (made if missing)\n"
    "  --slice RATE         instead: write MODEL (a sorted model compress wrote) pruned at RATE\n"
    "                       as an ordinary smaller model, the kept prefixes copied (no -f)\n";

/* The last stage printed and when: a line per second at most, and each stage's last. */
typedef struct progress {
    const char *stage;
    double printed_ms;
} progress;

static bool on_progress(void *user, const el_compress_progress *p) {
    progress *pr = user;
    if (!strcmp(p->stage, "plan")) {
        fprintf(stderr,
                "edgelora compress: rate %.2f keeps %d MLP channels, %d Q/K and %d V/O "
                "dimensions per head: %.1f%% of the block weights\n",
                p->rate, p->ff_kept, p->qk_kept, p->vo_kept, 100.0 * p->kept_fraction);
        return true;
    }
    double now = cli_now_ms();
    bool same = pr->stage && !strcmp(pr->stage, p->stage);
    if (same && p->done < p->total && now - pr->printed_ms < 1000) return true;
    pr->stage = p->stage;
    pr->printed_ms = now;
    double eta = p->done > 0 ? p->stage_s * (double)(p->total - p->done) / (double)p->done : 0;
    if (!strcmp(p->stage, "finetune"))
        fprintf(stderr, "edgelora compress: finetune step %lld/%lld, loss %.4f (rate %.2f), "
                "%.1f s, ETA %.0f s\n", (long long)p->done, (long long)p->total, p->loss,
                p->rate, p->stage_s, eta);
    else
        fprintf(stderr, "edgelora compress: %s %lld/%lld, %.1f s, ETA %.0f s\n", p->stage,
                (long long)p->done, (long long)p->total, p->stage_s, eta);
    return true;
}

/* "0,0.05,0.1" into rates (at most max); false after printing an error. */
static bool parse_rates(const char *s, float *rates, int max, int *n) {
    char buf[512];
    if (strlen(s) >= sizeof buf) {
        cli_error("compress", "--rates: list too long");
        return false;
    }
    strcpy(buf, s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        double v;
        if (*n == max) {
            cli_error("compress", "--rates: more than %d rates", max);
            return false;
        }
        if (!cli_float("compress", "--rates", tok, 0.0, 1.0, &v)) return false;
        rates[(*n)++] = (float)v;
    }
    if (*n == 0) {
        cli_error("compress", "--rates: no rates in '%s'", s);
        return false;
    }
    return true;
}

int cmd_compress(int argc, char **argv) {
    enum { MAX_RATES = 32, MAX_LORAS = 64 };
    const char *loras[MAX_LORAS];
    const char *model = NULL, *out = NULL;
    double slice = -1;
    float rates[MAX_RATES];
    int n_rates = 0;
    const el_compress_params d = el_compress_default_params();
    el_compress_params p = d;
    progress pr = {0};
    p.progress = on_progress;
    p.user = &pr;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return CLI_OK;
        } else if (!strcmp(a, "--no-sort-qk")) {
            p.sort_qk = false;
            continue;
        }
        if (!(v = cli_value("compress", argc, argv, &i))) return CLI_USAGE;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            model = v;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            p.calib_path = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out = v;
        } else if (!strcmp(a, "--sorted")) {
            p.sorted_path = v;
        } else if (!strcmp(a, "--type")) {
            p.type = v;
        } else if (!strcmp(a, "--head-type")) {
            p.head_type = v;
        } else if (!strcmp(a, "--group")) {
            if (!cli_int("compress", a, v, 1, 4096, &n)) return CLI_USAGE;
            p.group = (int32_t)n;
        } else if (!strcmp(a, "--calib-tokens")) {
            if (!cli_int("compress", a, v, 1, 1L << 30, &n)) return CLI_USAGE;
            p.calib_tokens = n;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!cli_int("compress", a, v, 0, 1024, &n)) return CLI_USAGE;
            p.n_threads = (int32_t)n;
        } else if (!strcmp(a, "--finetune")) {
            if (!cli_int("compress", a, v, 1, 1L << 30, &n)) return CLI_USAGE;
            p.finetune_steps = n;
        } else if (!strcmp(a, "--finetune-text")) {
            p.finetune_path = v;
        } else if (!strcmp(a, "--finetune-plot")) {
            p.finetune_plot = v;
        } else if (!strcmp(a, "--lora")) {
            if (p.n_loras == MAX_LORAS) {
                cli_error("compress", "--lora: at most %d adapters", MAX_LORAS);
                return CLI_USAGE;
            }
            loras[p.n_loras++] = v;
            p.lora_paths = loras;
        } else if (!strcmp(a, "--lora-out")) {
            p.lora_out_dir = v;
        } else if (!strcmp(a, "--finetune-adapter")) {
            p.finetune_adapter_path = v;
        } else if (!strcmp(a, "--finetune-rank")) {
            if (!cli_int("compress", a, v, 1, 1024, &n)) return CLI_USAGE;
            p.finetune_rank = (int32_t)n;
        } else if (!strcmp(a, "--finetune-ctx")) {
            if (!cli_int("compress", a, v, 2, 1 << 16, &n)) return CLI_USAGE;
            p.finetune_ctx = (int32_t)n;
        } else if (!strcmp(a, "--finetune-batch")) {
            if (!cli_int("compress", a, v, 1, 4096, &n)) return CLI_USAGE;
            p.finetune_batch = (int32_t)n;
        } else if (!strcmp(a, "--finetune-lr")) {
            double lr;
            if (!cli_float("compress", a, v, 1e-9, 0.999, &lr)) return CLI_USAGE;
            p.finetune_lr = (float)lr;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_int("compress", a, v, 0, 1L << 62, &n)) return CLI_USAGE;
            p.seed = (uint64_t)n;
        } else if (!strcmp(a, "--slice")) {
            if (!cli_float("compress", a, v, 0.0, 0.9, &slice)) return CLI_USAGE;
        } else if (!strcmp(a, "--rates")) {
            if (!parse_rates(v, rates, MAX_RATES, &n_rates)) return CLI_USAGE;
            p.rates = rates;
            p.n_rates = n_rates;
        } else {
            cli_error("compress", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    bool tuning_opts = p.finetune_path || p.finetune_plot || p.finetune_adapter_path ||
                       p.finetune_rank != d.finetune_rank || p.finetune_ctx != d.finetune_ctx ||
                       p.finetune_batch != d.finetune_batch || p.finetune_lr != d.finetune_lr ||
                       p.seed != d.seed;
    if (tuning_opts && p.finetune_steps == 0) {
        cli_error("compress", "the --finetune-* options and --seed need --finetune STEPS");
        return CLI_USAGE;
    }
    if (slice >= 0 && (p.finetune_steps || p.calib_path || p.n_loras)) {
        cli_error("compress", "--slice cuts a sorted model as it is: no -f, --finetune or --lora");
        return CLI_USAGE;
    }
    if (!p.n_loras != !p.lora_out_dir) {
        cli_error("compress", "--lora FILE and --lora-out DIR go together");
        return CLI_USAGE;
    }
    if (out && slice >= 0) {
        if (!(model = cli_model_path("compress", model))) return CLI_USAGE;
        el_status st = el_compress_slice(model, (float)slice, out);
        if (st != EL_OK) return cli_fail("compress", st);
        fprintf(stderr, "edgelora compress: wrote %s (%s pruned at %g)\n", out, model, slice);
        return CLI_OK;
    }
    if (!out || !p.calib_path) {
        cli_error("compress", "needs -f CALIB.txt and -o OUT.gguf (see --help)");
        return CLI_USAGE;
    }
    if (!(model = cli_model_path("compress", model))) return CLI_USAGE;
    double t0 = cli_now_ms();
    el_status st = el_compress(model, out, &p);
    if (st != EL_OK) return cli_fail("compress", st);
    fprintf(stderr, "edgelora compress: wrote %s in %.1f s\n", out, (cli_now_ms() - t0) / 1000.0);
    return CLI_OK;
}
