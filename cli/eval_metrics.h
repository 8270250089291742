/* eval_metrics.h - the scores `edgelora eval` computes (cli/eval_metrics.c): exact match, chrF,
 * language identification, and a paired bootstrap interval for the difference of two systems.
 * Every score is on a 0..100 scale. */
#ifndef EL_CLI_EVAL_METRICS_H
#define EL_CLI_EVAL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exact match: true if a and b are equal after trimming surrounding whitespace (space, tab,
 * CR, LF, VT, FF) from both. */
bool eval_exact(const char *a, size_t a_len, const char *b, size_t b_len);

/* chrF (Popović 2015, "chrF: character n-gram F-score for automatic MT evaluation", WMT15) with
 * sacreBLEU 2.x's defaults: character n-grams of orders 1..6 over Unicode characters with all
 * whitespace removed, beta = 2, no lowercasing, no word n-grams, no epsilon smoothing.
 * Statistics (n-grams of the hypothesis, of the reference, and matched: the multiset
 * intersection) are summed over the corpus per order; then the precisions and recalls of the
 * orders with n-grams on both sides ("effective orders") are averaged, and
 * chrF = 100 (1 + b^2) P R / (b^2 P + R) with those averages (0 if P + R = 0 or no order is
 * effective). Invalid UTF-8 bytes count as characters of their own that match nothing valid. */
enum { EVAL_CHRF_ORDER = 6 };
typedef struct eval_chrf_stats {
    int64_t hyp[EVAL_CHRF_ORDER], ref[EVAL_CHRF_ORDER], match[EVAL_CHRF_ORDER];
} eval_chrf_stats;

/* Adds the statistics of one hypothesis/reference pair to s; false if out of memory. */
bool eval_chrf_add(eval_chrf_stats *s, const char *hyp, size_t hyp_len, const char *ref,
                   size_t ref_len);
/* chrF of the statistics (0..100). */
double eval_chrf_score(const eval_chrf_stats *s);

/* The languages eval_lang_identify knows, as a NULL-terminated list of codes. */
extern const char *const eval_lang_codes[];
/* The language of a text among en de fr es it pt pl ru nl, or NULL if nothing in it points to
 * any. Evidence per language over the words (lowercased letters between non-letters): 1 for a
 * word in its list of very common function words, 0.5 per typical word ending, 0.3 per typical
 * letter group, 0.2 to es, it and pt for a word ending in a or o, and a weight per
 * characteristic letter (ß, ñ, ł, ã, Cyrillic, ...); the
 * highest total wins (ties: the earlier in the list). */
const char *eval_lang_identify(const char *text, size_t len);

/* What one example scored: per-example values whose corpus score eval_corpus_score forms. */
typedef enum eval_metric { EVAL_EXACT, EVAL_CHRF, EVAL_LANG } eval_metric;
typedef struct eval_score {
    bool exact;
    bool lang_ok;
    eval_chrf_stats chrf;
} eval_score;

/* The corpus score of examples s[idx[0..n)] (idx NULL: s[0..n)): the mean of exact or lang_ok
 * in percent, or chrF of the summed statistics. */
double eval_corpus_score(const eval_score *s, const size_t *idx, size_t n, eval_metric m);

/* The 95% paired bootstrap interval of score(b) - score(a) over n examples (Koehn 2004): `rounds`
 * resamples of n example indices drawn with replacement (the same for a and b, from a fixed
 * seed), the 2.5th and 97.5th percentiles of the resampled differences. false if out of memory. */
bool eval_bootstrap(const eval_score *a, const eval_score *b, size_t n, eval_metric m, int rounds,
                    uint64_t seed, double *lo, double *hi);

#endif
