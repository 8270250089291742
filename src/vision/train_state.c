/* train_state.c - the diffusion run's state and its checksummed checkpoint. */
#include "vision/train_state.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/outfile.h"

el_status el_dstate_init(el_dstate *s, const el_unet_config *c, const el_unet_file_info *sched,
                         uint64_t seed) {
    memset(s, 0, sizeof *s);
    el_status st = el_unet_init(&s->u, c);
    if (st != EL_OK) return st;
    size_t n = s->u.tb.n_floats;
    s->p = malloc(n * sizeof *s->p), s->g = calloc(n, sizeof *s->g);
    s->m = calloc(n, sizeof *s->m), s->v = calloc(n, sizeof *s->v);
    s->ema = malloc(n * sizeof *s->ema);
    if (!s->p || !s->g || !s->m || !s->v || !s->ema) {
        el_dstate_free(s);
        return el_error(EL_ERR_NOMEM, "image model training: out of memory");
    }
    s->sched = *sched;
    s->seed = seed;
    el_unet_init_params(&s->u, s->p, seed);
    memcpy(s->ema, s->p, n * sizeof *s->p);
    el_rng_seed(&s->rng, seed ^ 0x5eedba7c4e5ull);
    return EL_OK;
}

void el_dstate_free(el_dstate *s) {
    free(s->p), free(s->g), free(s->m), free(s->v), free(s->ema);
    el_history_free(&s->hist);
    el_unet_free(&s->u);
    memset(s, 0, sizeof *s);
}

/* The header fields, in file order. */
typedef struct header {
    char magic[4];
    uint32_t version;
    int32_t ch, temb, groups, n_class, timesteps;
    float beta_1, beta_T;
    uint32_t reserved; /* 0: the u64 fields that follow start at a multiple of 8 */
    uint64_t floats;
    int64_t step;
    uint64_t seed, rng, n_train, n_eval;
} header;

static header make_header(const el_dstate *s) {
    header h = {{'E', 'L', 'V', 'C'},
                1,
                s->u.c.ch,
                s->u.c.temb,
                s->u.c.groups,
                s->u.c.n_class,
                s->u.c.n_steps,
                s->sched.beta_1,
                s->sched.beta_T,
                0,
                s->u.tb.n_floats,
                s->step,
                s->seed,
                s->rng.s,
                s->hist.n_train,
                s->hist.n_eval};
    return h;
}

static void put(el_outfile *o, uint64_t *h, const void *p, size_t n, bool *ok) {
    *h = el_fnv1a(*h, p, n);
    if (*ok && fwrite(p, 1, n, o->f) != n) *ok = false;
}

el_status el_dstate_save(const char *path, const el_dstate *s) {
    el_outfile o;
    el_status st = el_outfile_open(&o, path);
    if (st != EL_OK) return st;
    header hd = make_header(s);
    uint64_t h = el_fnv_offset;
    size_t n = s->u.tb.n_floats * sizeof(float);
    bool ok = true;
    put(&o, &h, &hd, sizeof hd, &ok);
    put(&o, &h, s->hist.train, s->hist.n_train * 2 * sizeof(float), &ok);
    put(&o, &h, s->hist.eval, s->hist.n_eval * 2 * sizeof(float), &ok);
    put(&o, &h, s->p, n, &ok);
    put(&o, &h, s->m, n, &ok);
    put(&o, &h, s->v, n, &ok);
    put(&o, &h, s->ema, n, &ok);
    if (!ok || fwrite(&h, sizeof h, 1, o.f) != 1) {
        el_outfile_discard(&o);
        return el_error(EL_ERR_IO, "%s: write failed", path);
    }
    return el_outfile_commit(&o);
}

el_status el_dstate_load(const char *path, el_dstate *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return el_error(EL_ERR_IO, "%s: cannot open checkpoint", path);
    char *buf = NULL;
    size_t size = 0, cap = 0, got;
    el_status st = EL_OK;
    do { /* read whole: the checksum covers everything before it */
        if (size == cap) {
            char *grown = realloc(buf, cap = cap ? 2 * cap : (size_t)1 << 20);
            if (!grown) {
                st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            buf = grown;
        }
        got = fread(buf + size, 1, cap - size, f);
        size += got;
    } while (got > 0);
    fclose(f);
    header hd = {0}, want = make_header(s);
    uint64_t sum;
    if (st == EL_OK && (size < sizeof hd + sizeof sum || memcmp(buf, "ELVC", 4)))
        st = el_error(EL_ERR_FORMAT, "%s: not a diffusion checkpoint", path);
    if (st == EL_OK) {
        memcpy(&hd, buf, sizeof hd);
        memcpy(&sum, buf + size - sizeof sum, sizeof sum);
        if (el_fnv1a(el_fnv_offset, buf, size - sizeof sum) != sum)
            st = el_error(EL_ERR_FORMAT, "%s: damaged checkpoint (checksum mismatch)", path);
    }
    if (st == EL_OK && hd.version != 1)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: checkpoint version %u (this version reads 1)", path,
                      hd.version);
    if (st == EL_OK && (hd.ch != want.ch || hd.temb != want.temb || hd.groups != want.groups ||
                        hd.n_class != want.n_class || hd.timesteps != want.timesteps ||
                        hd.beta_1 != want.beta_1 || hd.beta_T != want.beta_T))
        st = el_error(EL_ERR_MISMATCH,
                      "%s: checkpoint of shape ch=%d temb=%d groups=%d "
                      "timesteps=%d, not the run's ch=%d temb=%d groups=%d timesteps=%d "
                      "(or another noise schedule)",
                      path, hd.ch, hd.temb, hd.groups, hd.timesteps, want.ch, want.temb,
                      want.groups, want.timesteps);
    size_t n = s->u.tb.n_floats * sizeof(float);
    if (st == EL_OK &&
        (hd.n_train > size || hd.n_eval > size ||
         size != sizeof hd + (hd.n_train + hd.n_eval) * 2 * sizeof(float) + 4 * n + sizeof sum))
        st = el_error(EL_ERR_FORMAT, "%s: checkpoint of the wrong size", path);
    el_history_free(&s->hist);
    const char *q = buf + sizeof hd;
    for (uint64_t i = 0; i < hd.n_train && st == EL_OK; i++, q += 8) {
        float pt[2];
        memcpy(pt, q, 8);
        st = el_history_add(&s->hist, false, pt[0], pt[1]);
    }
    for (uint64_t i = 0; i < hd.n_eval && st == EL_OK; i++, q += 8) {
        float pt[2];
        memcpy(pt, q, 8);
        st = el_history_add(&s->hist, true, pt[0], pt[1]);
    }
    if (st == EL_OK) {
        memcpy(s->p, q, n), memcpy(s->m, q + n, n), memcpy(s->v, q + 2 * n, n);
        memcpy(s->ema, q + 3 * n, n);
        s->step = hd.step;
        s->seed = hd.seed;
        s->rng.s = hd.rng;
    }
    free(buf);
    return st;
}
