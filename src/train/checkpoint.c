/* checkpoint.c - saving and restoring a training run (see checkpoint.h). */
#include "train/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/outfile.h"
#include "train/svg.h"

/* 2 added the checksum trailer, 3 the QAT settings and scales */
static const uint32_t checkpoint_version = 3;

el_status el_history_add(el_history *h, bool eval, float step, float loss) {
    float **a = eval ? &h->eval : &h->train;
    size_t *n = eval ? &h->n_eval : &h->n_train, *cap = eval ? &h->cap_eval : &h->cap_train;
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 256;
        float *p = realloc(*a, nc * 2 * sizeof *p);
        if (!p)
            return el_error(EL_ERR_NOMEM, "out of memory for the loss history");
        *a = p;
        *cap = nc;
    }
    (*a)[2 * *n] = step;
    (*a)[2 * *n + 1] = loss;
    (*n)++;
    return EL_OK;
}

el_status el_history_plot(const el_history *h, const char *path, const char *title,
                          const char *y_label) {
    float *xs = malloc((h->n_train + h->n_eval + 1) * 2 * sizeof *xs);
    if (!xs) return el_error(EL_ERR_NOMEM, "%s: out of memory for the plot", path);
    float *ys = xs + h->n_train + h->n_eval + 1;
    for (size_t i = 0; i < h->n_train; i++) xs[i] = h->train[2 * i], ys[i] = h->train[2 * i + 1];
    for (size_t i = 0; i < h->n_eval; i++)
        xs[h->n_train + i] = h->eval[2 * i], ys[h->n_train + i] = h->eval[2 * i + 1];
    el_series s[2] = {
        {"train", "#1f77b4", xs, ys, h->n_train},
        {"held-out", "#d62728", xs + h->n_train, ys + h->n_train, h->n_eval},
    };
    el_status st = el_svg_plot(path, title, "step", y_label, s, h->n_eval ? 2 : 1);
    free(xs);
    return st;
}

void el_history_free(el_history *h) {
    free(h->train);
    free(h->eval);
    memset(h, 0, sizeof *h);
}

/* The header fields, in file order, from a trainer. */
typedef struct header {
    int32_t shape[8];
    float norm_rope[2];
    int32_t rank;
    float alpha;
    uint32_t targets;
    uint64_t floats;
    int32_t qat[2];     /* int4 weights; QAT scales that follow the parameters (0: no QAT) */
    uint64_t fixed;     /* a hash of what the run holds fixed beside its model: the scales
                         * QAT does not track (a base's, a profile's), a distillation teacher */
} header;

/* QAT sites (tmodel.h), whose scales a checkpoint keeps: tracked ones change as training goes */
static size_t qat_sites(const el_tmodel *m) {
    return m->qat.x_scale ? (size_t)m->c.n_layer * EL_TN_LINEAR + 1 : 0;
}

/* Scales that come with the base or its profile rather than from training: a run resumed
 * under others would mix two integer models. */
static uint64_t qat_fixed_hash(const el_tmodel *m) {
    uint64_t h = el_fnv_offset;
    if (m->qat.x_scale && !(m->qat.momentum > 0.0f))
        h = el_fnv1a(h, m->qat.x_scale, qat_sites(m) * sizeof(float));
    if (m->qat.lora_scale)
        h = el_fnv1a(h, m->qat.lora_scale,
                     (size_t)m->c.n_layer * EL_TN_LINEAR * 4 * sizeof(float));
    return h;
}

/* The fixed part of a run's objective: its QAT scales and its teacher (none: the scales'
 * hash alone, as before teachers were). */
static uint64_t fixed_hash(const el_trainer *t) {
    uint64_t h = qat_fixed_hash(t->m);
    return t->teacher ? el_fnv1a(h, &t->teacher_hash, sizeof t->teacher_hash) : h;
}

static header make_header(const el_trainer *t) {
    const el_tconfig *c = &t->m->c;
    header h = {{c->dim, c->n_layer, c->n_head, c->n_head_kv, c->n_ff, c->n_ctx, c->n_vocab,
                 c->tied},
                {c->rms_eps, c->rope_base},
                t->what == EL_TRAIN_LORA ? t->m->rank : 0,
                t->what == EL_TRAIN_LORA ? t->m->alpha : 0.0f,
                t->what == EL_TRAIN_LORA ? t->m->targets : 0,
                t->n,
                {t->m->qat.int4_weights, (int32_t)qat_sites(t->m)},
                fixed_hash(t)};
    return h;
}

/* Writes that keep the checksum of everything written so far. */
typedef struct summed_writer {
    FILE *f;
    uint64_t sum;
} summed_writer;

static bool put(summed_writer *w, const void *p, size_t n) {
    if (n == 0) return true;
    w->sum = el_fnv1a(w->sum, p, n);
    return fwrite(p, 1, n, w->f) == n;
}

el_status el_checkpoint_save(const char *path, const el_trainer *t, const el_loader *l,
                             const el_history *hist) {
    el_outfile out;
    el_status st = el_outfile_open(&out, path);
    if (st != EL_OK) return st;
    summed_writer w = {out.f, el_fnv_offset};
    header h = make_header(t);
    uint32_t version = checkpoint_version;
    int64_t pos[2] = {l->epoch, l->index};
    uint64_t counts[2] = {hist->n_train, hist->n_eval};
    bool ok = put(&w, "ELCK", 4) && put(&w, &version, 4) && put(&w, h.shape, sizeof h.shape) &&
              put(&w, h.norm_rope, 8) && put(&w, &h.rank, 4) && put(&w, &h.alpha, 4) &&
              put(&w, &h.targets, 4) && put(&w, &h.floats, 8) && put(&w, h.qat, 8) &&
              put(&w, &h.fixed, 8) &&
              put(&w, &t->step, 8) &&
              put(&w, &l->seed, 8) && put(&w, pos, 16) && put(&w, counts, 16) &&
              put(&w, hist->train, hist->n_train * 2 * sizeof(float)) &&
              put(&w, hist->eval, hist->n_eval * 2 * sizeof(float)) &&
              put(&w, t->p, t->n * sizeof(float)) && put(&w, t->mom, t->n * sizeof(float)) &&
              put(&w, t->vel, t->n * sizeof(float)) &&
              put(&w, t->m->qat.x_scale, qat_sites(t->m) * sizeof(float));
    uint64_t sum = w.sum;
    ok = ok && put(&w, &sum, 8);
    if (!ok) {
        el_outfile_discard(&out);
        return el_error(EL_ERR_IO, "%s: cannot write the checkpoint", path);
    }
    return el_outfile_commit(&out);
}

/* Checks the trailing checksum against the rest of the file, and leaves f just after the magic
 * and version (where the header starts). */
static el_status verify_checksum(FILE *f, const char *path) {
    if (fseeko(f, 0, SEEK_END) != 0)
        return el_error(EL_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    off_t size = ftello(f);
    rewind(f);
    uint64_t sum = el_fnv_offset, stored;
    unsigned char buf[1 << 16];
    for (off_t left = size - 8; left > 0;) {
        size_t n = left < (off_t)sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, n, f) != n) break;
        sum = el_fnv1a(sum, buf, n);
        left -= (off_t)n;
    }
    bool whole = size >= 8 && fread(&stored, 1, 8, f) == 8 && stored == sum;
    if (fseeko(f, 8, SEEK_SET) != 0)
        return el_error(EL_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    if (!whole)
        return el_error(EL_ERR_FORMAT, "%s: the checkpoint is damaged (its checksum does not "
                        "match: truncated or altered); delete it to start over", path);
    return EL_OK;
}

static bool get(FILE *f, void *p, size_t n) { return n == 0 || fread(p, 1, n, f) == n; }

el_status el_checkpoint_load(const char *path, el_trainer *t, el_loader *l, el_history *hist) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return el_error(EL_ERR_IO, "%s: cannot open", path);
    header want = make_header(t), got;
    char magic[4];
    uint32_t version = 0;
    int64_t step, pos[2];
    uint64_t seed, counts[2];
    el_status st = EL_OK;
    if (!get(f, magic, 4) || memcmp(magic, "ELCK", 4) || !get(f, &version, 4) ||
        version != checkpoint_version)
        st = el_error(EL_ERR_FORMAT, "%s: not an edgelora checkpoint of version %u (this one "
                      "says %u)", path, checkpoint_version, version);
    else
        st = verify_checksum(f, path);
    if (st != EL_OK)
        ;
    else if (!get(f, got.shape, sizeof got.shape) || !get(f, got.norm_rope, 8) ||
             !get(f, &got.rank, 4) || !get(f, &got.alpha, 4) || !get(f, &got.targets, 4) ||
             !get(f, &got.floats, 8) || !get(f, got.qat, 8) || !get(f, &got.fixed, 8) ||
             !get(f, &step, 8) ||
             !get(f, &seed, 8) ||
             !get(f, pos, 16) || !get(f, counts, 16))
        st = el_error(EL_ERR_FORMAT, "%s: truncated header", path);
    else if (memcmp(got.shape, want.shape, sizeof got.shape) ||
             memcmp(got.norm_rope, want.norm_rope, 8))
        st = el_error(EL_ERR_MISMATCH, "%s: the checkpoint is of another model shape", path);
    else if (got.rank != want.rank || got.alpha != want.alpha || got.targets != want.targets ||
             got.floats != want.floats)
        st = el_error(EL_ERR_MISMATCH, "%s: the checkpoint has other LoRA settings", path);
    else if (memcmp(got.qat, want.qat, sizeof got.qat))
        st = el_error(EL_ERR_MISMATCH, "%s: the checkpoint has other quantization-aware "
                      "training settings (--qat)", path);
    else if (got.fixed != want.fixed)
        st = el_error(EL_ERR_MISMATCH, "%s: the checkpoint was made under other quantization "
                      "scales (another base or --profile) or against another teacher "
                      "(--teacher, --teacher-lora, or none)", path);
    else if (seed != l->seed)
        st = el_error(EL_ERR_MISMATCH, "%s: the checkpoint was made with seed %llu, not %llu",
                      path, (unsigned long long)seed, (unsigned long long)l->seed);
    else if (counts[0] > (1u << 28) || counts[1] > (1u << 28) || pos[0] < 0 || pos[1] < 0 ||
             pos[1] > l->n_items || step < 0)
        st = el_error(EL_ERR_FORMAT, "%s: corrupted position or history", path);
    if (st == EL_OK) {
        el_history_free(hist);
        float pt[2];
        for (uint64_t i = 0; i < counts[0] + counts[1] && st == EL_OK; i++)
            st = get(f, pt, 8) ? el_history_add(hist, i >= counts[0], pt[0], pt[1])
                               : el_error(EL_ERR_FORMAT, "%s: truncated history", path);
    }
    if (st == EL_OK && (!get(f, t->p, t->n * sizeof(float)) ||
                        !get(f, t->mom, t->n * sizeof(float)) ||
                        !get(f, t->vel, t->n * sizeof(float)) ||
                        !get(f, t->m->qat.x_scale, qat_sites(t->m) * sizeof(float)) ||
                        fseeko(f, 8, SEEK_CUR) != 0 ||
                        fgetc(f) != EOF))
        st = el_error(EL_ERR_FORMAT, "%s: truncated or oversized parameters", path);
    fclose(f);
    if (st == EL_OK) {
        t->step = step;
        el_loader_seek(l, pos[0], pos[1]);
    }
    return st;
}
