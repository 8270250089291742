/* test_eval_metrics.c - the scores of `edgelora eval` (cli/eval_metrics.c, linked in by the
 * Makefile): exact match and chrF against hand-computed values and against
 * tests/golden/make_chrf_golden.py (Python, written from the definition); language
 * identification on held-out corpus text and hand-picked sentences; the paired bootstrap against
 * cases with known answers and the normal approximation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/eval_metrics.h"
#include "testutil.h"

static double chrf_of(const char *hyp, const char *ref) {
    eval_chrf_stats s = {{0}, {0}, {0}};
    if (!eval_chrf_add(&s, hyp, strlen(hyp), ref, strlen(ref))) return -1;
    return eval_chrf_score(&s);
}

static int test_exact(void) {
    CHECK(eval_exact("  Hallo Welt\n", 13, "Hallo Welt", 10));
    CHECK(eval_exact("", 0, " \t\r\n", 4));
    CHECK(!eval_exact("Hallo  Welt", 11, "Hallo Welt", 10)); /* inner spaces count */
    CHECK(!eval_exact("hallo welt", 10, "Hallo Welt", 10));  /* so does case */
    CHECK(!eval_exact("Hallo", 5, "Hallo Welt", 10));
    return TEST_PASS;
}

static int test_chrf_by_hand(void) {
    /* hyp "ab", ref "abc": order 1: 2 hyp, 3 ref, 2 matched (P 1, R 2/3); order 2: "ab" vs
     * "ab","bc": P 1, R 1/2; orders 3..6 have no hypothesis n-gram and do not count.
     * P = 1, R = (2/3 + 1/2) / 2 = 7/12; chrF = 100 * 5 * 7/12 / (4 + 7/12) = 100 * 35/55 */
    CHECK(fabs(chrf_of("ab", "abc") - 100.0 * 35.0 / 55.0) < 1e-9);
    /* hyp "aaa", ref "aa" (matches are a multiset intersection): order 1: min(3, 2) = 2
     * matched, P 2/3, R 1; order 2: "aa" twice vs once: P 1/2, R 1; order 3: no reference
     * n-gram. P = 7/12, R = 1; chrF = 100 * 5 * 7/12 / (4 * 7/12 + 1) = 100 * 35/40 = 87.5 */
    CHECK(fabs(chrf_of("aaa", "aa") - 87.5) < 1e-9);
    /* whitespace is removed before counting: "a b" is "ab" */
    CHECK(fabs(chrf_of("a b", " ab\t") - 100.0) < 1e-9);
    CHECK(chrf_of("", "abc") == 0 && chrf_of("abc", "") == 0 && chrf_of("", "") == 0);
    CHECK(chrf_of("xyz", "abc") == 0);
    /* "ü" (2 bytes) is one character: "üb" vs "ub" shares 1 of 2 unigrams and no bigram:
     * P = R = 1/2 over order 1, 0 over order 2 -> P = R = 1/4, chrF = 25 */
    CHECK(fabs(chrf_of("üb", "ub") - 25.0) < 1e-9);
    /* an invalid byte is a character of its own that matches itself only */
    CHECK(fabs(chrf_of("a\xff", "a\xff") - 100.0) < 1e-9);
    CHECK(fabs(chrf_of("a\xff", "a\xc3\xbf") - 25.0) < 1e-9);
    return TEST_PASS;
}

/* The next tab- or newline-terminated field of *p as a NUL-terminated string (in place). */
static char *next_field(char **p, char end) {
    char *s = *p, *e = strchr(s, end);
    if (!e) return NULL;
    *e = '\0';
    *p = e + 1;
    return s;
}

static int test_chrf_golden(void) {
    size_t size;
    char *pairs = test_read_file("tests/golden/chrf_pairs.tsv", &size);
    char *golden = test_read_file("tests/golden/chrf_golden.txt", &size);
    CHECK(pairs && golden);
    char *p = pairs, *g = golden;
    eval_chrf_stats corpus = {{0}, {0}, {0}};
    int n = 0, rc = TEST_PASS;
    while (rc == TEST_PASS && *p) {
        char *hyp = next_field(&p, '\t'), *ref = next_field(&p, '\n');
        char *line = next_field(&g, '\n');
        if (!hyp || !ref || !line || strncmp(line, "sentence ", 9)) {
            rc = TEST_FAIL;
            break;
        }
        eval_chrf_stats s = {{0}, {0}, {0}};
        double want = strtod(line + 9, &line);
        if (!eval_chrf_add(&s, hyp, strlen(hyp), ref, strlen(ref)) ||
            !eval_chrf_add(&corpus, hyp, strlen(hyp), ref, strlen(ref)))
            rc = TEST_FAIL;
        for (int k = 0; k < EVAL_CHRF_ORDER && rc == TEST_PASS; k++) {
            long h = strtol(line, &line, 10), r = strtol(line, &line, 10),
                 m = strtol(line, &line, 10);
            if (h != s.hyp[k] || r != s.ref[k] || m != s.match[k]) {
                test_note("pair %d order %d: ours %lld %lld %lld, golden %ld %ld %ld", n + 1,
                          k + 1, (long long)s.hyp[k], (long long)s.ref[k],
                          (long long)s.match[k], h, r, m);
                rc = TEST_FAIL;
            }
        }
        if (rc == TEST_PASS && fabs(eval_chrf_score(&s) - want) > 1e-9) {
            test_note("pair %d: chrF %.12f, golden %.12f", n + 1, eval_chrf_score(&s), want);
            rc = TEST_FAIL;
        }
        n++;
    }
    char *last = next_field(&g, '\n');
    if (rc == TEST_PASS && (!last || strncmp(last, "corpus ", 7) ||
                            fabs(eval_chrf_score(&corpus) - strtod(last + 7, NULL)) > 1e-9)) {
        test_note("corpus chrF %.12f, golden line '%s'", eval_chrf_score(&corpus),
                  last ? last : "(none)");
        rc = TEST_FAIL;
    }
    free(pairs);
    free(golden);
    CHECK(rc == TEST_PASS && n >= 18);
    return TEST_PASS;
}

/* One sentence per language, none of them from the corpus. */
static int test_lang_sentences(void) {
    static const char *const cases[][2] = {
        {"en", "The weather was cold, but we walked to the station anyway."},
        {"de", "Gestern habe ich mit meiner Schwester über das Wetter gesprochen."},
        {"fr", "Nous avons mangé une pomme dans le jardin de ma grand-mère."},
        {"es", "Mañana vamos a la playa con los niños si no llueve."},
        {"it", "Domani andiamo al mare con i bambini se non piove."},
        {"pt", "Amanhã vamos à praia com as crianças se não chover."},
        {"pl", "Jutro pojedziemy nad morze z dziećmi, jeśli nie będzie padać."},
        {"ru", "Завтра мы поедем на море с детьми, если не будет дождя."},
        {"nl", "Morgen gaan we met de kinderen naar het strand als het niet regent."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = eval_lang_identify(cases[i][1], strlen(cases[i][1]));
        if (!got || strcmp(got, cases[i][0])) {
            test_note("'%s': %s, expected %s", cases[i][1], got ? got : "(none)", cases[i][0]);
            return TEST_FAIL;
        }
    }
    /* short strings without a function word: endings and letter groups decide */
    static const char *const short_cases[][2] = {
        {"de", "Einstellungen speichern"}, {"fr", "Nouveau tableau"},
        {"es", "Configuración avanzada"},  {"it", "Impostazioni avanzate"},
        {"es", "Nombre de la cuenta"}, /* "de la" is fr and es alike: the final a decides */
        {"fr", "Supprimer le fichier de la ligne de la ligne"}, /* but not the a of "la" */
        {"pt", "Configurações"},          {"pl", "Ustawienia zaawansowane"},
        {"nl", "Geavanceerde instellingen opslaan"}, {"en", "Nothing happening"},
    };
    for (size_t i = 0; i < sizeof short_cases / sizeof short_cases[0]; i++) {
        const char *got = eval_lang_identify(short_cases[i][1], strlen(short_cases[i][1]));
        if (!got || strcmp(got, short_cases[i][0])) {
            test_note("'%s': %s, expected %s", short_cases[i][1], got ? got : "(none)",
                      short_cases[i][0]);
            return TEST_FAIL;
        }
    }
    CHECK(eval_lang_identify("12345 !!! ...", 13) == NULL);
    CHECK(eval_lang_identify("", 0) == NULL);
    return TEST_PASS;
}

/* The held-out split of scripts/train_default_model.sh (the last 2% of each corpus file's
 * lines): whole paragraphs, and their first 12 words (what `continue` outputs are like). */
static int test_lang_corpus(void) {
    int rc = TEST_PASS, found = 0;
    for (const char *const *lang = eval_lang_codes; *lang && rc == TEST_PASS; lang++) {
        char rel[64];
        snprintf(rel, sizeof rel, "corpus/%s.txt", *lang);
        size_t size;
        char *text = test_read_file(test_data_path(rel), &size);
        if (!text) continue;
        found++;
        size_t n_lines = 0;
        for (size_t i = 0; i < size; i++) n_lines += text[i] == '\n';
        size_t first = n_lines - n_lines / 50, line = 0, n = 0, ok = 0, ok_short = 0;
        for (char *p = text; *p;) {
            char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (line++ >= first && len) {
                const char *got = eval_lang_identify(p, len);
                ok += got && !strcmp(got, *lang);
                size_t cut = 0;
                for (int words = 0; cut < len && words < 12; cut++)
                    words += p[cut] == ' ';
                got = eval_lang_identify(p, cut);
                ok_short += got && !strcmp(got, *lang);
                n++;
            }
            p += len + (e != NULL);
        }
        double acc = (double)ok / (double)n, acc_short = (double)ok_short / (double)n;
        test_note("%s: %zu held-out lines, %.1f%% identified (first 12 words: %.1f%%)", *lang, n,
                  100 * acc, 100 * acc_short);
        if (acc < 0.95 || acc_short < 0.90) rc = TEST_FAIL;
        free(text);
    }
    if (found == 0) return test_skip("no ../shared/data/corpus");
    return rc;
}

/* Short UI strings (the translations of the held-out split of corpus/en-XX.tsv, the second
 * column of its last 2% of lines) often hold no function word: the word endings and letter
 * groups must still identify most of them. */
static int test_lang_ui_strings(void) {
    size_t total = 0, total_ok = 0;
    for (const char *const *lang = eval_lang_codes + 1; *lang; lang++) { /* en-en: none */
        char rel[64];
        snprintf(rel, sizeof rel, "corpus/en-%s.tsv", *lang);
        size_t size;
        char *text = test_read_file(test_data_path(rel), &size);
        if (!text) continue;
        size_t n_lines = 0, line = 0, n = 0, ok = 0;
        for (size_t i = 0; i < size; i++) n_lines += text[i] == '\n';
        size_t first = n_lines - n_lines / 50;
        for (char *p = text; *p;) {
            char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char *tab = memchr(p, '\t', len), *tab2 = tab ? memchr(tab + 1, '\t', len - (size_t)(tab + 1 - p)) : NULL;
            if (line++ >= first && tab && tab2) {
                const char *got = eval_lang_identify(tab + 1, (size_t)(tab2 - tab - 1));
                ok += got && !strcmp(got, *lang);
                n++;
            }
            p += len + (e != NULL);
        }
        test_note("%s: %zu held-out UI strings, %.1f%% identified", *lang, n,
                  n ? 100.0 * (double)ok / (double)n : 0);
        total += n;
        total_ok += ok;
        free(text);
    }
    if (total == 0) return test_skip("no ../shared/data/corpus");
    test_note("all: %.1f%%", 100.0 * (double)total_ok / (double)total);
    CHECK(total_ok >= total * 7 / 10);
    return TEST_PASS;
}

static int test_bootstrap(void) {
    enum { N = 400 };
    eval_score *a = calloc(N, sizeof *a), *b = calloc(N, sizeof *b);
    CHECK(a && b);
    double lo, hi;
    /* identical systems: every resample differs by 0 */
    CHECK(eval_bootstrap(a, a, N, EVAL_EXACT, 1000, 1, &lo, &hi) && lo == 0 && hi == 0);
    /* b right everywhere, a nowhere: every resample differs by 100 */
    for (int i = 0; i < N; i++) b[i].exact = true;
    CHECK(eval_bootstrap(a, b, N, EVAL_EXACT, 1000, 1, &lo, &hi) && lo == 100 && hi == 100);
    /* b right on every other example: the difference is 50 with a standard error of
     * 100 * sqrt(0.5 * 0.5 / 400) = 2.5, so the interval is about 50 -+ 1.96 * 2.5 = 4.9 */
    for (int i = 0; i < N; i++) b[i].exact = i % 2 == 0;
    CHECK(fabs(eval_corpus_score(b, NULL, N, EVAL_EXACT) - 50) < 1e-12);
    CHECK(eval_bootstrap(a, b, N, EVAL_EXACT, 1000, 7, &lo, &hi));
    test_note("difference 50: interval [%.2f, %.2f] (normal approximation [45.1, 54.9])", lo, hi);
    CHECK(lo > 43.5 && lo < 46.5 && hi > 53.5 && hi < 56.5);
    /* the same seed gives the same interval */
    double lo2, hi2;
    CHECK(eval_bootstrap(a, b, N, EVAL_EXACT, 1000, 7, &lo2, &hi2) && lo2 == lo && hi2 == hi);
    /* chrF resamples the summed statistics: b matching on every n-gram is 100 each time */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < EVAL_CHRF_ORDER; k++) {
            a[i].chrf = (eval_chrf_stats){{0}, {0}, {0}};
            b[i].chrf.hyp[k] = b[i].chrf.ref[k] = b[i].chrf.match[k] = 10;
            a[i].chrf.hyp[k] = a[i].chrf.ref[k] = 10;
        }
    CHECK(eval_bootstrap(a, b, N, EVAL_CHRF, 200, 1, &lo, &hi) && fabs(lo - 100) < 1e-9 &&
          fabs(hi - 100) < 1e-9);
    free(a);
    free(b);
    return TEST_PASS;
}

int main(void) {
    run_test("exact", test_exact);
    run_test("chrf_by_hand", test_chrf_by_hand);
    run_test("chrf_golden", test_chrf_golden);
    run_test("lang_sentences", test_lang_sentences);
    run_test("lang_corpus", test_lang_corpus);
    run_test("lang_ui_strings", test_lang_ui_strings);
    run_test("bootstrap", test_bootstrap);
    return tests_exit_code();
}
