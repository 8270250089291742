/* testutil.c - see testutil.h. */
#include "testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_failed;
static char tmp_dir[256];

void run_test(const char *name, int (*fn)(void)) {
    int r = fn();
    if (r == TEST_PASS) printf("PASS %s\n", name);
    else if (r == TEST_SKIP) printf("SKIP %s\n", name);
    else {
        printf("FAIL %s\n", name);
        n_failed++;
    }
    fflush(stdout);
}

static void remove_tmp_dir(void) {
    if (!tmp_dir[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
}

int tests_exit_code(void) { return n_failed ? 1 : 0; }

void test_failed(const char *file, int line, const char *what) {
    printf("  %s:%d: check failed: %s\n", file, line, what);
}

int test_skip(const char *why) {
    printf("  skipped: %s\n", why);
    return TEST_SKIP;
}

void test_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

const char *test_data_path(const char *relative) {
    static char path[1024];
    const char *dir = getenv("EL_DATA_DIR");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "../shared/data", relative);
    return access(path, R_OK) == 0 ? path : NULL;
}

char *test_read_file(const char *path, size_t *size) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    do {
        if (n + 4097 > cap) {
            cap = 2 * (n + 4097);
            char *bigger = realloc(buf, cap);
            if (!bigger) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = bigger;
        }
        n += k = fread(buf + n, 1, 4096, f);
    } while (k > 0);
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

bool test_vectors_open(const char *name, test_vectors *tv) {
    memset(tv, 0, sizeof *tv);
    char rel[256];
    size_t n_out;
    snprintf(rel, sizeof rel, "tokenizers/%s.inp", name);
    tv->inp = test_read_file(test_data_path(rel), &tv->n_inp);
    snprintf(rel, sizeof rel, "tokenizers/%s.out", name);
    tv->out = test_read_file(test_data_path(rel), &n_out);
    if (!tv->inp || !tv->out) {
        test_vectors_close(tv);
        return false;
    }
    tv->cur = tv->inp;
    tv->line = tv->out;
    return true;
}

bool test_vectors_next(test_vectors *tv, const char **text, size_t *len) {
    static const char sep[] = "\n__ggml_vocab_test__\n";
    if (tv->cur >= tv->inp + tv->n_inp) {
        tv->cur = NULL; /* the end, cleanly */
        return false;
    }
    char *end = strstr(tv->cur, sep), *eol = strchr(tv->line, '\n');
    if (!end || !eol) return false;
    tv->n_ids = 0;
    for (char *p = tv->line; p < eol && tv->n_ids < sizeof tv->ids / sizeof tv->ids[0];) {
        char *q;
        long id = strtol(p, &q, 10);
        if (q == p) break;
        tv->ids[tv->n_ids++] = (int32_t)id;
        p = q;
    }
    *text = tv->cur;
    *len = (size_t)(end - tv->cur);
    tv->cur = end + sizeof sep - 1;
    tv->line = eol + 1;
    return true;
}

void test_vectors_close(test_vectors *tv) {
    free(tv->inp);
    free(tv->out);
    tv->inp = tv->out = NULL;
}

const char *test_tmp_dir(void) {
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/edgelora-test-XXXXXX");
        if (!mkdtemp(tmp_dir)) {
            perror("mkdtemp");
            exit(2);
        }
        atexit(remove_tmp_dir);
    }
    return tmp_dir;
}

const char *test_tmp_path(const char *name) {
    static char buf[8][512];
    static int i;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof buf[i], "%s/%s", test_tmp_dir(), name);
    return buf[i];
}

uint32_t test_rand_u32(test_rng *r) {
    /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

float test_rand_uniform(test_rng *r, float lo, float hi) {
    return lo + (hi - lo) * (float)(test_rand_u32(r) >> 8) / (float)(1u << 24);
}

double test_max_rel_err(const float *a, const float *b, size_t n) {
    double maxb = 1.0, maxd = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(b[i]) > maxb) maxb = fabs(b[i]);
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= maxd)) maxd = d; /* NaN propagates as a failure */
    }
    return maxd / maxb;
}

el_model *test_load_stories(void) {
    const char *bin = test_data_path("models/stories260K.bin");
    if (!bin)
        return NULL;
    char bin_path[1024]; /* test_data_path's storage is reused by the next call */
    snprintf(bin_path, sizeof bin_path, "%s", bin);
    const char *tok = test_data_path("models/tok512.bin");
    if (!tok)
        return NULL;
    el_model_params p = el_model_default_params();
    p.tokenizer_path = tok;
    el_model *m = NULL;
    if (el_model_load(bin_path, &p, &m) != EL_OK)
        fprintf(stderr, "load: %s\n", el_last_error());
    return m;
}
