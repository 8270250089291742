/* train.c - `edgelora train` (pretraining a base model), and what the trainers share: the
 * optimization options, file lists, the progress bar and Ctrl-C handling. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------------- shared */

const char cli_train_opts_help[] =
    "  -f FILE...            training data (several files may follow one -f)\n"
    "  --eval FILE...        held-out data, evaluated every --eval-every steps\n"
    "  --steps N             optimizer steps (default 100)\n"
    "  --batch B             sequences per micro-batch (default 8)\n"
    "  --accum N             micro-batches per step (gradient accumulation, default 1)\n"
    "  --lr X                peak learning rate (default 1e-3)\n"
    "  --min-lr-ratio X      the cosine ends at lr * X (default 0.1)\n"
    "  --warmup N            steps of linear warmup (default 10)\n"
    "  --weight-decay X      AdamW decoupled weight decay on matrices (default 0.1)\n"
    "  --clip X              global gradient-norm limit, 0 for none (default 1)\n"
    "  --eval-every N        steps between evaluations (default 50; 0: at the end)\n"
    "  --eval-batches N      micro-batches per evaluation (default 4)\n"
    "  --seed N              initialization and data order (default 1)\n"
    "  -t, --threads N       threads (default: all cores)\n"
    "  --checkpoint FILE     save the run's state here (on Ctrl-C, every --checkpoint-every\n"
    "                        steps); with --resume, continue from it\n"
    "  --checkpoint-every N  steps between checkpoints (default 0: only on Ctrl-C and at the\n"
    "                        end)\n"
    "  --resume              continue from --checkpoint if it exists (a warning if not: the\n"
    "                        run starts fresh)\n"
    "  --no-plot             do not write the loss plot (OUT without extension + .loss.svg)\n"
    "  -q, --quiet           no progress output\n";

/* Appends the values after a flag that take files (up to the next option). */
static int take_files(const char *cmd, int argc, char **argv, int *i, const char ***list,
                      int32_t *n) {
    int start = *i + 1;
    while (*i + 1 < argc && argv[*i + 1][0] != '-')
        (*i)++;
    if (*i + 1 == start) {
        cli_error(cmd, "%s needs at least one file", argv[start - 1]);
        return -1;
    }
    const char **l = realloc(*list, (size_t)(*n + *i + 1 - start) * sizeof *l);
    if (!l) {
        cli_error(cmd, "out of memory");
        return -1;
    }
    for (int k = start; k <= *i; k++)
        l[(*n)++] = argv[k];
    *list = l;
    return 1;
}

int cli_train_opt(const char *cmd, cli_train_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    el_train_params *p = &o->p;
    long n;
    double x;
    uint64_t u;
    if (!strcmp(a, "-f")) {
        return take_files(cmd, argc, argv, i, (const char ***)&p->train_files, &p->n_train_files);
    } else if (!strcmp(a, "--eval")) {
        return take_files(cmd, argc, argv, i, (const char ***)&p->eval_files, &p->n_eval_files);
    } else if (!strcmp(a, "--steps")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1L << 40, &n)) return -1;
        p->n_steps = n;
    } else if (!strcmp(a, "--batch")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1 << 16, &n)) return -1;
        p->batch = (int32_t)n;
    } else if (!strcmp(a, "--accum")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1 << 16, &n)) return -1;
        p->grad_accum = (int32_t)n;
    } else if (!strcmp(a, "--lr")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 1e-12, 10, &x)) return -1;
        p->lr = (float)x;
    } else if (!strcmp(a, "--min-lr-ratio")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1, &x)) return -1;
        p->min_lr_ratio = (float)x;
    } else if (!strcmp(a, "--warmup")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 0, 1L << 40, &n)) return -1;
        p->warmup = n;
    } else if (!strcmp(a, "--weight-decay")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 10, &x)) return -1;
        p->weight_decay = (float)x;
    } else if (!strcmp(a, "--clip")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_float(cmd, a, v, 0, 1e9, &x)) return -1;
        p->grad_clip = (float)x;
    } else if (!strcmp(a, "--eval-every")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 0, 1L << 40, &n)) return -1;
        p->eval_every = n;
    } else if (!strcmp(a, "--eval-batches")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1 << 20, &n)) return -1;
        p->eval_batches = (int32_t)n;
    } else if (!strcmp(a, "--seed")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_u64(cmd, a, v, &u)) return -1;
        p->seed = u;
    } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 1, 1024, &n)) return -1;
        p->n_threads = (int32_t)n;
    } else if (!strcmp(a, "--checkpoint")) {
        if (!(v = cli_value(cmd, argc, argv, i))) return -1;
        p->checkpoint_path = v;
    } else if (!strcmp(a, "--checkpoint-every")) {
        if (!(v = cli_value(cmd, argc, argv, i)) || !cli_int(cmd, a, v, 0, 1L << 40, &n)) return -1;
        p->checkpoint_every = n;
    } else if (!strcmp(a, "--resume")) {
        p->resume = true;
    } else if (!strcmp(a, "--no-plot")) {
        o->no_plot = true;
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
        o->quiet = true;
    } else {
        return 0;
    }
    return 1;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { interrupted = sig; }

static void fmt_duration(char *buf, size_t cap, double s) {
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, cap, "?");
    else if (s >= 3600)
        snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    else if (s >= 60)
        snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, cap, "%.0fs", s);
}

/* A bar redrawn in place on a terminal; on a pipe, a line every 10% and at each evaluation. */
static bool progress(void *user, const el_train_progress *pr) {
    cli_train_opts *o = user;
    if (!isnan(pr->eval_loss))
        o->last_eval = pr->eval_loss;
    if (o->first_step < 0) /* a resumed run starts past 0; elapsed time counts from here */
        o->first_step = pr->step - 1;
    if (!o->quiet) {
        double steps_per_s = pr->elapsed_s > 0 ? (pr->step - o->first_step) / pr->elapsed_s : 0;
        char eta[32], eval[32] = "";
        const char *unit = o->unit ? o->unit : "tok";
        fmt_duration(eta, sizeof eta,
                     steps_per_s > 0 ? (double)(pr->n_steps - pr->step) / steps_per_s : -1);
        if (!isnan(o->last_eval))
            snprintf(eval, sizeof eval, " eval %.4f", o->last_eval);
        if (o->tty) {
            int width = 24, done = (int)(width * pr->step / pr->n_steps);
            fprintf(stderr, "\r[%.*s%*s] %lld/%lld loss %.4f%s lr %.2e %.0f %s/s ETA %s   ",
                    done, "########################", width - done, "", (long long)pr->step,
                    (long long)pr->n_steps, pr->loss, eval, pr->lr, pr->tokens_per_s, unit, eta);
        } else if (!isnan(pr->eval_loss) || pr->step == pr->n_steps ||
                   pr->step % (pr->n_steps / 10 > 0 ? pr->n_steps / 10 : 1) == 0) {
            fprintf(stderr, "step %lld/%lld loss %.4f%s lr %.2e %.0f %s/s ETA %s\n",
                    (long long)pr->step, (long long)pr->n_steps, pr->loss, eval, pr->lr,
                    pr->tokens_per_s, unit, eta);
        }
    }
    o->last_loss = pr->loss;
    o->tokens_per_s = pr->tokens_per_s;
    return !interrupted;
}

void cli_train_begin(cli_train_opts *o, const char *out_path, char *plot, size_t cap) {
    o->tty = isatty(2);
    o->last_loss = o->last_eval = NAN;
    o->first_step = -1;
    o->p.progress = progress;
    o->p.user = o;
    if (!o->no_plot) {
        /* OUT without its extension + ".loss.svg", beside the output */
        const char *slash = strrchr(out_path, '/'), *dot = strrchr(out_path, '.');
        size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - out_path) : strlen(out_path);
        snprintf(plot, cap, "%.*s.loss.svg", (int)stem, out_path);
        o->p.plot_path = plot;
    }
    signal(SIGINT, on_sigint);
}

int cli_train_end(const char *cmd, cli_train_opts *o, el_status st, const char *out_path) {
    if (o->tty && !o->quiet)
        fputc('\n', stderr);
    free((void *)o->p.train_files);
    free((void *)o->p.eval_files);
    if (st == EL_ERR_CANCELLED) { /* stopped by the progress callback (SIGINT) */
        fprintf(stderr, "edgelora %s: interrupted%s\n", cmd,
                o->p.checkpoint_path ? "; the checkpoint allows --resume" : "");
        return CLI_FAIL;
    }
    if (st)
        return cli_fail(cmd, st);
    if (isnan(o->last_loss)) { /* resumed from a checkpoint that had run every step */
        fprintf(stderr, "wrote %s (every step was done in the checkpoint)%s%s\n", out_path,
                o->p.plot_path ? "; plot " : "", o->p.plot_path ? o->p.plot_path : "");
        return CLI_OK;
    }
    fprintf(stderr, "wrote %s (final loss %.4f", out_path, o->last_loss);
    if (!isnan(o->last_eval))
        fprintf(stderr, ", held-out %.4f", o->last_eval);
    fprintf(stderr, ", %.0f %s/s)%s%s\n", o->tokens_per_s, o->unit ? o->unit : "tokens",
            o->p.plot_path ? "; plot " : "", o->p.plot_path ? o->p.plot_path : "");
    return CLI_OK;
}

/* ------------------------------------------------------------- train */

static const char train_help[] =
    "usage: edgelora train --shape SHAPE --tokenizer TOK.gguf -f TRAIN... -o MODEL.gguf [options]\n"
    "       edgelora train --init MODEL.gguf [--ffn N] -f TRAIN... -o OUT.gguf [options]\n"
    "Pretrains a llama-shaped model from scratch on text (or .u16/.u32 token files) and writes it\n"
    "as an F32 GGUF with the tokenizer's vocabulary. Shows a progress bar on a terminal and\n"
    "writes the loss curves as an SVG beside the output.\n"
    "  --shape S             comma-separated dim=,layers=,heads=,kv_heads=,ffn=,ctx= (kv_heads\n"
    "                        defaults to heads, ffn to about 8/3 dim, ctx to 64)\n"
    "  --untied              a separate output matrix (default: tied to the embeddings)\n"
    "  --tokenizer FILE      GGUF vocabulary (e.g. from `edgelora train-tokenizer`)\n"
    "  --qat w4a8            quantization-aware: train the integer model (each block's linear\n"
    "                        weights int4 per output channel, their inputs int8 at scales\n"
    "                        tracked over training) and write it (W4 weights with static\n"
    "                        activation scales); dim and ffn must be multiples of 32\n"
    "  --init MODEL.gguf     start from this model's weights, shape and vocabulary instead of\n"
    "                        random ones (no --shape, --untied or --tokenizer)\n"
    "  --ffn N               with --init: widen the FFN to N channels; the new ones start\n"
    "                        adding nothing, so training starts from the model's function\n"
    "  -o FILE               the model to write\n";

/* Parses "dim=64,layers=2,..." into p. */
static bool parse_shape(const char *s, el_train_params *p) {
    bool have_kv = false, have_ffn = false;
    while (*s) {
        char key[16];
        long v;
        int used = 0;
        if (sscanf(s, "%15[a-z_]=%ld%n", key, &v, &used) != 2 || v <= 0 || v > (1 << 20))
            return false;
        if (!strcmp(key, "dim")) p->dim = (int32_t)v;
        else if (!strcmp(key, "layers")) p->n_layer = (int32_t)v;
        else if (!strcmp(key, "heads")) p->n_head = (int32_t)v;
        else if (!strcmp(key, "kv_heads")) p->n_head_kv = (int32_t)v, have_kv = true;
        else if (!strcmp(key, "ffn")) p->n_ff = (int32_t)v, have_ffn = true;
        else if (!strcmp(key, "ctx")) p->n_ctx = (int32_t)v;
        else return false;
        s += used;
        if (*s == ',')
            s++;
        else if (*s)
            return false;
    }
    if (!have_kv)
        p->n_head_kv = p->n_head;
    if (!have_ffn)
        p->n_ff = (p->dim * 8 / 3 + 31) / 32 * 32;
    return true;
}

int cmd_train(int argc, char **argv) {
    cli_train_opts o = {.p = el_train_default_params()};
    const char *out = NULL;
    bool shaped = false; /* --shape or --untied given */
    int rc = CLI_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = cli_train_opt("train", &o, argc, argv, &i);
        if (r < 0) goto done;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(train_help, stdout);
            fputs(cli_train_opts_help, stdout);
            rc = CLI_OK;
            goto done;
        } else if (!strcmp(a, "--shape")) {
            const char *v = cli_value("train", argc, argv, &i);
            if (!v) goto done;
            shaped = true;
            if (!parse_shape(v, &o.p)) {
                cli_error("train", "--shape: '%s' is not a list of dim=,layers=,heads=,"
                          "kv_heads=,ffn=,ctx= with positive values", v);
                goto done;
            }
        } else if (!strcmp(a, "--untied")) {
            o.p.tied_embeddings = false;
            shaped = true;
        } else if (!strcmp(a, "--init")) {
            if (!(o.p.init_path = cli_value("train", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--ffn")) {
            const char *v = cli_value("train", argc, argv, &i);
            long n;
            if (!v || !cli_int("train", a, v, 1, 1 << 20, &n)) goto done;
            o.p.init_n_ff = (int32_t)n;
        } else if (!strcmp(a, "--tokenizer")) {
            if (!(o.p.tokenizer_path = cli_value("train", argc, argv, &i))) goto done;
        } else if (!strcmp(a, "--qat")) {
            if (!(o.p.qat = cli_value("train", argc, argv, &i))) goto done;
            if (strcmp(o.p.qat, "w4a8") != 0) {
                cli_error("train", "--qat: '%s' is not a kind this trains (w4a8)", o.p.qat);
                goto done;
            }
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value("train", argc, argv, &i))) goto done;
        } else {
            cli_error("train", "unknown option '%s'", a);
            goto done;
        }
    }
    if (o.p.init_path && (shaped || o.p.tokenizer_path)) {
        cli_error("train", "--init takes the shape and vocabulary from %s: no --shape, --untied "
                  "or --tokenizer", o.p.init_path);
        goto done;
    }
    if (o.p.init_n_ff && !o.p.init_path) {
        cli_error("train", "--ffn widens the model of --init; a new model's FFN is --shape's ffn=");
        goto done;
    }
    if (!out || !(o.p.tokenizer_path || o.p.init_path) || o.p.n_train_files == 0) {
        cli_error("train", "needs --tokenizer (or --init), -f and -o (see --help)");
        goto done;
    }
    char plot[4096];
    cli_train_begin(&o, out, plot, sizeof plot);
    el_status st = el_train(&o.p, out);
    return cli_train_end("train", &o, st, out);
done:
    free((void *)o.p.train_files);
    free((void *)o.p.eval_files);
    return rc;
}
