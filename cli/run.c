/* run.c - `edgelora run`: generate text from a prompt, streamed to stdout. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "variants.h"

static const char help[] =
    "usage: edgelora run -m MODEL -p PROMPT [-n N] [options]\n"
    "Generates text after PROMPT and streams it (prompt included) to stdout; timings go to\n"
    "stderr.\n"
    "  -m, --model FILE       GGUF model or llama2.c checkpoint\n"
    "  --tokenizer FILE       llama2.c tokenizer.bin (for a llama2.c checkpoint)\n"
    "  -p, --prompt TEXT      the prompt (default: empty, generation starts after BOS)\n"
    "  -f, --file FILE        read the prompt from FILE\n"
    "  -e, --escape           process escapes in the prompt and --system (\\n, \\t, \\\\, \\\", \\',\n"
    "                         \\r, \\xHH), as llama.cpp's -e does\n"
    "  --chat                 the prompt is a user's message: apply the model's chat template\n"
    "                         (tokenizer.chat_template), or the one --chat-template names\n"
    "  --chat-template NAME   chatml, llama3, gemma, phi3, mistral-v1, mistral-v3,\n"
    "                         mistral-v3-tekken, mistral-v7, llama2, llama2-sys,\n"
    "                         llama2-sys-bos, llama2-sys-strip or edgelora (implies --chat)\n"
    "  --system TEXT          a system message before the user's (with --chat)\n"
    "  --stop TEXT            end the generation where its text first contains TEXT (not\n"
    "                         printed); repeatable\n"
    "  -n, --n-predict N      tokens to generate (default 128; -1: until EOS or context end)\n"
    "  -c, --ctx-size N       KV cache size in tokens (default: prompt + N)\n"
    "  -b, --batch-size N     prompt tokens per forward pass (default 512)\n"
    "  -t, --threads N        threads (default: all cores)\n"
    "  --kv-type T            KV cache elements: f16 (default; half the memory) or f32\n"
    "  --keep-page-cache      a model the page cache holds in 4 KB pages is left so (default:\n"
    "                         its unmapped cached pages are dropped and read again into 2 MB\n"
    "                         pages, which decode faster: docs/bench.md)\n"
    "  --profile FILE         run under a quantization profile (`edgelora profile`): its int8\n"
    "                         activation scales, adapters quantized to int8 with its scales\n"
    "  --prune RATE           a UniQL compressed model's pruning rate (0: whole; rounded up to\n"
    "                         a rate of the file's table)\n"
    "  --mem-budget B|auto    the smallest rate whose weights and KV cache fit B bytes (auto: the\n"
    "                         memory available now, /proc/meminfo and the cgroup limit)\n";

static const char help_tail[] =
    "  --ignore-eos           keep generating past the end-of-sequence token\n"
    "  --lora FILE            bind a LoRA adapter (GGUF file or PEFT folder); repeatable, the\n"
    "                         terms of several adapters add up\n"
    "  --lora-scaled FILE S   the same with scale S\n"
    "  --json                 print the result as one JSON object instead of streaming the\n"
    "                         text: {\"prompt\", \"text\", \"prompt_tokens\",\n"
    "                         \"generated_tokens\", \"finish_reason\" (eos, stop or length),\n"
    "                         \"timings\", \"adapters\", \"sampling\", \"seed\" (null if\n"
    "                         greedy)}; with --variants: {\"variants\": [...]} (below)\n";

typedef struct run_opts {
    cli_model_opts mo;
    const char *prompt, *prompt_file;
    const char *chat_template, *system; /* --chat-template, --system */
    const char *stops[CLI_MAX_STOPS];    /* --stop */
    int n_stops;
    bool chat, escape;
    long n_predict, n_batch;
    cli_sampling_opts sampling;
    bool ignore_eos, json;
    cli_lora_opts lora;
    cli_variants_opts variants;
    cli_spec_opts spec;
} run_opts;

static int parse_args(run_opts *o, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int r = cli_model_opt("run", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_kv_opt("run", &o->mo, argc, argv, &i);
        if (r == 0) r = cli_sampling_opt("run", &o->sampling, argc, argv, &i);
        if (r == 0) r = cli_lora_opt("run", &o->lora, argc, argv, &i);
        if (r == 0) r = cli_variants_opt(&o->variants, argc, argv, &i);
        if (r == 0) r = cli_spec_opt("run", &o->spec, argc, argv, &i);
        if (r < 0) return CLI_USAGE;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            fputs(cli_sampling_help, stdout);
            fputs(help_tail, stdout);
            fputs(cli_spec_help, stdout);
            fputs(cli_variants_help, stdout);
            return -1;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(o->prompt = cli_value("run", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(o->prompt_file = cli_value("run", argc, argv, &i))) return CLI_USAGE;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!(v = cli_value("run", argc, argv, &i)) ||
                !cli_int("run", a, v, -1, 1 << 24, &o->n_predict))
                return CLI_USAGE;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (!(v = cli_value("run", argc, argv, &i)) ||
                !cli_int("run", a, v, 1, 1 << 16, &o->n_batch))
                return CLI_USAGE;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--ignore-eos")) {
            o->ignore_eos = true;
        } else if (!strcmp(a, "-e") || !strcmp(a, "--escape")) {
            o->escape = true;
        } else if (!strcmp(a, "--chat")) {
            o->chat = true;
        } else if (!strcmp(a, "--chat-template")) {
            if (!(o->chat_template = cli_value("run", argc, argv, &i))) return CLI_USAGE;
            o->chat = true;
        } else if (!strcmp(a, "--stop")) {
            if (!(v = cli_value("run", argc, argv, &i))) return CLI_USAGE;
            if (o->n_stops == CLI_MAX_STOPS || !*v) {
                cli_error("run", "--stop takes a non-empty string, at most %d times", CLI_MAX_STOPS);
                return CLI_USAGE;
            }
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "--system")) {
            if (!(o->system = cli_value("run", argc, argv, &i))) return CLI_USAGE;
        } else {
            cli_error("run", "unknown option '%s'", a);
            return CLI_USAGE;
        }
    }
    if (!o->variants.k && (o->variants.adapters || o->variants.first)) {
        cli_error("run", "--variant-adapters and --variant-first need --variants K");
        return CLI_USAGE;
    }
    if (o->variants.k && (o->spec.forecast || o->spec.on)) {
        cli_error("run", "--variants and --forecast/--tree do not go together yet");
        return CLI_USAGE;
    }
    if (o->prompt && o->prompt_file) {
        cli_error("run", "give the prompt with -p or -f, not both");
        return CLI_USAGE;
    }
    if (o->system && !o->chat) {
        cli_error("run", "--system is a chat's system message: it needs --chat");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* What of the text is out: the prompt's and generated tokens' text as last detokenized, the
 * prompt's part of it, the bytes printed (counted, not written, with --json) and the state of
 * the generated part. */
typedef struct run_text {
    char *text;
    size_t prompt_bytes, printed;
    cli_stream gen;
} run_text;

/* Prints the text of tokens[0..n) beyond what is out: the prompt whole (first call), then the
 * generated text but a tail that could still become a stop string (all of it once final); up to
 * a stop string and no further once one appears. */
static el_status print_new_text(const el_model *m, const run_opts *o, const int32_t *tokens,
                                size_t n, bool prompt, bool final, run_text *out) {
    char *text;
    el_status st = el_detokenize(m, tokens, n, false, true, &text);
    if (st != EL_OK) return st;
    free(out->text);
    out->text = text;
    size_t upto = strlen(text);
    if (prompt) {
        out->prompt_bytes = upto;
    } else if (upto > out->prompt_bytes) {
        out->gen.shown = cli_stream_update(&out->gen, text + out->prompt_bytes,
                                           upto - out->prompt_bytes, o->stops, o->n_stops, final);
        upto = out->prompt_bytes + out->gen.shown;
    }
    if (upto > out->printed) {
        if (!o->json) {
            fwrite(text + out->printed, 1, upto - out->printed, stdout);
            fflush(stdout);
        }
        out->printed = upto;
    }
    return EL_OK;
}

/* What --json reports of a run besides its text. */
typedef struct run_result {
    const char *prompt; /* as the model got it (the chat template applied) */
    size_t prompt_len, n_prompt;
    long n_gen;
    const char *finish;
    double t_prompt, t_gen; /* ms */
} run_result;

static void print_json(const run_opts *o, const el_binding *bind, const run_text *out,
                       const run_result *r) {
    const el_sampler_params *sp = &o->sampling.sp;
    fputs("{\"prompt\": ", stdout);
    el_json_write_string(stdout, r->prompt, r->prompt_len);
    fputs(", \"text\": ", stdout);
    el_json_write_string(stdout, out->text + out->prompt_bytes, out->printed - out->prompt_bytes);
    printf(", \"prompt_tokens\": %zu, \"generated_tokens\": %ld, \"finish_reason\": \"%s\",\n",
           r->n_prompt, r->n_gen, r->finish);
    printf(" \"timings\": {\"prompt_ms\": %.3f, \"prompt_tokens_per_s\": %.1f, "
           "\"generation_ms\": %.3f, \"generation_tokens_per_s\": %.1f},\n",
           r->t_prompt, r->n_prompt / (r->t_prompt / 1e3 + 1e-9), r->t_gen,
           r->n_gen / (r->t_gen / 1e3 + 1e-9));
    fputs(" \"adapters\": [", stdout);
    for (int i = 0; i < o->lora.n; i++) {
        el_adapter_info ai;
        el_adapter_get_info(bind[i].adapter, &ai);
        fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
        el_json_write_string(stdout, ai.name, strlen(ai.name));
        fputs(", \"path\": ", stdout);
        el_json_write_string(stdout, o->lora.paths[i], strlen(o->lora.paths[i]));
        printf(", \"scale\": %g}", bind[i].scale);
    }
    printf("],\n \"sampling\": {\"temperature\": %g, \"top_k\": %d, \"top_p\": %g, "
           "\"min_p\": %g, \"repeat_penalty\": %g, \"repeat_last_n\": %d, "
           "\"ignore_eos\": %s},\n",
           sp->temperature, sp->top_k, sp->top_p, sp->min_p, sp->repeat_penalty,
           sp->repeat_last_n, o->ignore_eos ? "true" : "false");
    if (sp->temperature > 0)
        printf(" \"seed\": %llu}\n", (unsigned long long)sp->seed);
    else
        fputs(" \"seed\": null}\n", stdout);
    fflush(stdout);
}

/* Where generated tokens come from: plain decoding, one per step (the last one fed, the next
 * sampled), or speculative steps of one or more. */
typedef struct token_source {
    el_context *ctx;
    el_sampler *smp;
    el_spec *spec;
    int32_t last_row;  /* plain: the row whose logits give the next token */
    int32_t n;         /* tokens in the sequence so far */
    int32_t n_batch;   /* prompt rows per forward pass */
    bool started;
} token_source;

static el_status next_tokens(token_source *g, const int32_t *all, int32_t *buf, int32_t cap,
                             int32_t *n_out) {
    el_status st;
    if (g->spec) {
        if (g->started) return el_spec_step(g->spec, buf, cap, n_out);
        g->started = true;
        *n_out = 1;
        return el_spec_start(g->spec, all, g->n, buf);
    }
    if (g->started && (st = cli_decode_tokens(g->ctx, &all[g->n - 1], 1, g->n - 1, 1)) != EL_OK)
        return st;
    if (!g->started && (st = cli_decode_tokens(g->ctx, all, g->n, 0, g->n_batch)) != EL_OK)
        return st;
    g->started = true;
    if ((st = el_sampler_sample(g->smp, el_get_logits(g->ctx, g->last_row), buf)) != EL_OK)
        return st;
    g->last_row = 0;
    el_sampler_accept(g->smp, buf[0]);
    *n_out = 1;
    return EL_OK;
}

static int generate(const run_opts *o, el_model *m, const el_binding *bind, const char *prompt,
                    size_t prompt_len, const el_forecast *forecast) {
    int32_t *tokens;
    size_t n_prompt;
    el_status st = cli_tokenize(m, prompt, prompt_len, true, true, &tokens, &n_prompt);
    if (st != EL_OK) return cli_fail("run", st);
    if (n_prompt == 0) {
        cli_error("run", "the prompt is empty and the vocabulary has no BOS token to start from");
        free(tokens);
        return CLI_FAIL;
    }
    if (o->variants.k) {
        cli_variants_run_args va = {.lora = bind, .n_lora = o->lora.n, .sp = o->sampling.sp,
                                    .ignore_eos = o->ignore_eos, .n_predict = o->n_predict,
                                    .ctx = o->mo.ctx, .n_batch = o->n_batch,
                                    .threads = o->mo.threads, .kv_type = o->mo.kv_type};
        cli_variants_opts vo = o->variants;
        vo.json = o->json;
        int rc = cli_variants_run(&vo, &va, m, tokens, n_prompt);
        free(tokens);
        return rc;
    }
    el_model_info info;
    el_model_get_info(m, &info);
    long n_predict = o->n_predict;
    long n_ctx = o->mo.ctx ? o->mo.ctx
                 : n_predict < 0 ? (info.n_ctx_train > 0 ? info.n_ctx_train : 4096)
                                 : (long)n_prompt + n_predict;
    if ((long)n_prompt > n_ctx || ((long)n_prompt == n_ctx && n_predict != 0)) {
        if ((long)n_prompt > n_ctx)
            cli_error("run", "the prompt has %zu tokens, more than the context of %ld (-c)",
                      n_prompt, n_ctx);
        else
            cli_error("run", "the prompt's %zu tokens fill the context of %ld (-c): no room "
                             "to generate", n_prompt, n_ctx);
        free(tokens);
        return CLI_FAIL;
    }
    cli_warn_context("run", &info, n_ctx);
    if (n_predict < 0 || (long)n_prompt + n_predict > n_ctx) n_predict = n_ctx - (long)n_prompt;

    int32_t *all = realloc(tokens, (n_prompt + (size_t)n_predict) * sizeof *all);
    if (!all) {
        free(tokens);
        cli_error("run", "out of memory");
        return CLI_FAIL;
    }
    el_context_params cp = el_context_default_params();
    int32_t spec_rows = forecast ? el_spec_max_rows(forecast, &o->spec.params) : 0;
    cp.n_ctx = (int32_t)n_ctx + spec_rows; /* room for a step's candidates beyond the text */
    cp.n_batch = (int32_t)(o->n_batch ? o->n_batch : 512);
    if (cp.n_batch > n_ctx) cp.n_batch = (int32_t)n_ctx;
    if (cp.n_batch < spec_rows) cp.n_batch = spec_rows;
    cp.n_seq_max = 1;
    cp.n_threads = (int32_t)o->mo.threads;
    cp.kv_type = o->mo.kv_type;
    el_context *ctx = NULL;
    el_sampler *smp = NULL;
    el_spec *spec = NULL;
    if ((st = el_context_create(m, &cp, &ctx)) != EL_OK ||
        (st = el_context_bind(ctx, 0, bind, o->lora.n)) != EL_OK ||
        (st = el_sampler_create(&o->sampling.sp, info.n_vocab, &smp)) != EL_OK ||
        (forecast && (st = el_spec_create(ctx, forecast, smp, &o->spec.params, &spec)) != EL_OK)) {
        el_sampler_free(smp);
        el_context_free(ctx);
        free(all);
        return cli_fail("run", st);
    }
    for (size_t i = 0; i < n_prompt; i++) el_sampler_accept(smp, all[i]);

    size_t n = n_prompt;
    run_text out = {0};
    token_source src = {.ctx = ctx, .smp = smp, .spec = spec, .n = (int32_t)n_prompt,
                        .n_batch = cp.n_batch,
                        .last_row = (int32_t)((n_prompt - 1) % (size_t)cp.n_batch)};
    double t0 = cli_now_ms(), t_prompt = 0, t1 = t0;
    st = print_new_text(m, o, all, n, true, false, &out);
    long n_gen = 0;
    const char *finish = "length";
    int32_t buf[EL_SPEC_MAX_DEPTH + 1], n_buf = 0, at = 0;
    bool ended = false;
    while (st == EL_OK && n_gen < n_predict && !ended) {
        if (at == n_buf) {
            int32_t cap = n_predict - n_gen < EL_SPEC_MAX_DEPTH + 1 ? (int32_t)(n_predict - n_gen)
                                                                 : EL_SPEC_MAX_DEPTH + 1;
            bool first = !src.started;
            if ((st = next_tokens(&src, all, buf, cap, &n_buf)) != EL_OK) break;
            if (first) t_prompt = cli_now_ms() - t0, t1 = cli_now_ms();
            at = 0;
        }
        int32_t tok = buf[at++];
        if (!o->ignore_eos && el_token_is_eog(m, tok)) {
            finish = "eos";
            break;
        }
        all[n++] = tok;
        src.n = (int32_t)n;
        n_gen++;
        if ((st = print_new_text(m, o, all, n, false, false, &out)) != EL_OK || out.gen.stopped)
            ended = true;
    }
    double t_gen = cli_now_ms() - t1;
    if (st == EL_OK && !out.gen.stopped) st = print_new_text(m, o, all, n, false, true, &out);
    if (out.gen.stopped) finish = "stop";
    if (st == EL_OK && o->json) {
        run_result r = {.prompt = prompt, .prompt_len = prompt_len, .n_prompt = n_prompt,
                        .n_gen = n_gen, .finish = finish, .t_prompt = t_prompt, .t_gen = t_gen};
        print_json(o, bind, &out, &r);
    } else if (!o->json) {
        printf("\n");
        fflush(stdout); /* the text before the timings, when both go to one terminal */
        if (n_predict == 0) /* nothing asked of the model: the prompt was not decoded */
            fprintf(stderr, "prompt: %zu tokens, not decoded (no tokens to generate)\n", n_prompt);
        else
            fprintf(stderr, "prompt: %zu tokens in %.1f ms (%.1f tokens/s); generated: %ld tokens "
                            "in %.1f ms (%.1f tokens/s)\n",
                    n_prompt, t_prompt, n_prompt / (t_prompt / 1e3 + 1e-9), n_gen, t_gen,
                    n_gen / (t_gen / 1e3 + 1e-9));
    }
    free(out.text);
    el_spec_stats ss;
    if (spec && !o->json && el_spec_get_stats(spec, &ss) == EL_OK && ss.steps > 0)
        fprintf(stderr, "speculative: %lld steps, %.2f tokens a step, %lld with a tree, %.1f rows "
                        "a step\n", (long long)ss.steps, (double)ss.tokens / (double)ss.steps,
                (long long)ss.tree_steps, (double)ss.rows / (double)ss.steps);
    el_spec_free(spec);
    el_sampler_free(smp);
    el_context_free(ctx);
    free(all);
    return st == EL_OK ? CLI_OK : cli_fail("run", st);
}

int cmd_run(int argc, char **argv) {
    run_opts o = {.n_predict = 128, .sampling = {.sp = el_sampler_default_params()}};
    int rc = parse_args(&o, argc, argv);
    if (rc) return rc < 0 ? CLI_OK : rc;
    cli_sampling_seed(&o.sampling);
    el_model *m;
    if ((rc = cli_load_model("run", &o.mo, false, &m))) return rc;
    size_t len = 0;
    char *owned = NULL, *system = NULL, *chat = NULL;
    if (o.prompt_file) {
        owned = cli_read_file("run", o.prompt_file, &len);
    } else {
        owned = strdup(o.prompt ? o.prompt : "");
        len = owned ? strlen(owned) : 0;
    }
    if (o.system) system = strdup(o.system);
    if (!owned && !o.prompt_file) cli_error("run", "out of memory");
    el_status st = owned && (!o.system || system) ? EL_OK : EL_ERR_NOMEM;
    if (st == EL_OK && o.escape) {
        len = cli_unescape(owned);
        if (system) cli_unescape(system);
    }
    const char *prompt = owned;
    if (st == EL_OK && o.chat) { /* the prompt as the user's message of a one-turn chat */
        el_chat_message msg[2];
        size_t n_msg = 0;
        if (system) msg[n_msg++] = (el_chat_message){"system", system};
        msg[n_msg++] = (el_chat_message){"user", owned};
        st = el_chat_apply(m, o.chat_template, msg, n_msg, true, &chat);
        if (st == EL_OK) prompt = chat, len = strlen(chat);
    }
    el_binding bind[CLI_MAX_LORA];
    int n_loaded = 0;
    if (st == EL_OK) st = cli_lora_load(&o.lora, m, bind, &n_loaded);
    el_forecast *forecast = NULL;
    if (st == EL_OK && !o.variants.k)
        rc = cli_spec_load("run", &o.spec, m, cli_model_path("run", o.mo.model), &forecast);
    rc = st != EL_OK ? (owned ? cli_fail("run", st) : CLI_FAIL)
         : rc       ? rc
                    : generate(&o, m, bind, prompt, len, forecast);
    el_forecast_free(forecast);
    for (int i = 0; i < n_loaded; i++) el_adapter_free(bind[i].adapter);
    free(owned), free(system), free(chat);
    el_model_free(m);
    return rc;
}
