/* eval_metrics.c - exact match, chrF, language identification and the paired bootstrap of
 * `edgelora eval` (see eval_metrics.h for the definitions). */
#include "eval_metrics.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ characters */

/* Decodes one UTF-8 character at s[*i] (advancing *i). An invalid or truncated sequence gives
 * 0x110000 + its first byte: above every code point, so it matches only the same bad byte. */
static uint32_t utf8_next(const char *s, size_t len, size_t *i) {
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = len - *i;
    uint32_t c = p[0];
    int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3
                                                                                                : -1;
    if (n < 0 || (size_t)n >= left) goto bad;
    uint32_t cp = n == 0 ? c : c & (0x3Fu >> n);
    for (int k = 1; k <= n; k++) {
        if ((p[k] & 0xC0) != 0x80) goto bad;
        cp = cp << 6 | (p[k] & 0x3F);
    }
    static const uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto bad;
    *i += (size_t)n + 1;
    return cp;
bad:
    *i += 1;
    return 0x110000 + c;
}

/* What Python's str.isspace() calls whitespace (sacreBLEU removes it with str.split()). */
static bool is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool trim_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool eval_exact(const char *a, size_t a_len, const char *b, size_t b_len) {
    while (a_len && trim_space(*a)) a++, a_len--;
    while (a_len && trim_space(a[a_len - 1])) a_len--;
    while (b_len && trim_space(*b)) b++, b_len--;
    while (b_len && trim_space(b[b_len - 1])) b_len--;
    return a_len == b_len && !memcmp(a, b, a_len);
}

/* ------------------------------------------------------------------ chrF */

/* An n-gram of up to 6 characters packed exactly: 3 characters of 21 bits in each word
 * (0x110000 + a byte still fits in 21 bits). */
typedef struct ngram {
    uint64_t w[2];
} ngram;

static int ngram_cmp(const void *pa, const void *pb) {
    const ngram *a = pa, *b = pb;
    for (int k = 0; k < 2; k++)
        if (a->w[k] != b->w[k]) return a->w[k] < b->w[k] ? -1 : 1;
    return 0;
}

/* The characters of text without whitespace into a malloc'd array; NULL if out of memory. */
static uint32_t *chars_without_space(const char *text, size_t len, size_t *n) {
    uint32_t *c = malloc((len + 1) * sizeof *c);
    if (!c) return NULL;
    *n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = utf8_next(text, len, &i);
        if (!is_space(cp)) c[(*n)++] = cp;
    }
    return c;
}

/* The sorted n-grams of order `order` of c[0..n) into g (room for n). */
static size_t ngrams_sorted(const uint32_t *c, size_t n, int order, ngram *g) {
    if (n < (size_t)order) return 0;
    size_t count = n - (size_t)order + 1;
    for (size_t i = 0; i < count; i++) {
        g[i] = (ngram){{0, 0}};
        for (int k = 0; k < order; k++) g[i].w[k / 3] |= (uint64_t)c[i + (size_t)k] << (21 * (k % 3));
    }
    qsort(g, count, sizeof *g, ngram_cmp);
    return count;
}

/* Size of the multiset intersection of two sorted n-gram lists. */
static size_t ngrams_common(const ngram *a, size_t na, const ngram *b, size_t nb) {
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        int c = ngram_cmp(&a[i], &b[j]);
        if (c == 0) common++;
        if (c <= 0) i++;
        if (c >= 0) j++;
    }
    return common;
}

bool eval_chrf_add(eval_chrf_stats *s, const char *hyp, size_t hyp_len, const char *ref,
                   size_t ref_len) {
    size_t nh = 0, nr = 0;
    uint32_t *ch = chars_without_space(hyp, hyp_len, &nh);
    uint32_t *cr = chars_without_space(ref, ref_len, &nr);
    ngram *gh = malloc((nh + 1) * sizeof *gh), *gr = malloc((nr + 1) * sizeof *gr);
    bool ok = ch && cr && gh && gr;
    for (int order = 1; ok && order <= EVAL_CHRF_ORDER; order++) {
        size_t kh = ngrams_sorted(ch, nh, order, gh), kr = ngrams_sorted(cr, nr, order, gr);
        s->hyp[order - 1] += (int64_t)kh;
        s->ref[order - 1] += (int64_t)kr;
        s->match[order - 1] += (int64_t)ngrams_common(gh, kh, gr, kr);
    }
    free(ch);
    free(cr);
    free(gh);
    free(gr);
    return ok;
}

double eval_chrf_score(const eval_chrf_stats *s) {
    double p = 0, r = 0;
    int effective = 0;
    for (int k = 0; k < EVAL_CHRF_ORDER; k++) {
        if (s->hyp[k] <= 0 || s->ref[k] <= 0) continue;
        p += (double)s->match[k] / (double)s->hyp[k];
        r += (double)s->match[k] / (double)s->ref[k];
        effective++;
    }
    if (effective == 0) return 0;
    p /= effective;
    r /= effective;
    const double b2 = 2.0 * 2.0;
    return p + r > 0 ? 100.0 * (1 + b2) * p * r / (b2 * p + r) : 0;
}

/* ------------------------------------------------------ language identification */

const char *const eval_lang_codes[] = {"en", "de", "fr", "es", "it", "pt", "pl", "ru", "nl", NULL};
enum { N_LANG = 9 };

/* Very common function words of each language, lowercase, space-separated. Many are shared
 * (de, la, en, a, ...); a shared word adds to every language that has it. */
static const char *const lang_words[N_LANG] = {
    /* en */ "the and of to is in that it was for with he you not are this be on as his have "
             "they but at from by which or we she had her will would there their what all were "
             "when been has my me your him an if do so no can one only used these those its "
             "into than then also should could must may more any some how who our",
    /* de */ "der die und das ist nicht ich sie es den mit ein eine zu von sich auf dem des "
             "auch wie wird war er aber noch wenn nur für über oder dass daß kann bei einen "
             "einer hat sind wir werden aus nach um im am man mir mich dich du ihr ihre sein "
             "seine zum zur vom ins diese dieser dieses wurde soll muss kein keine",
    /* fr */ "le la les de des et est un une du que qui dans pour pas il elle ne se sur au "
             "aux avec ce cette sont par plus vous nous je mais ou où été être son sa ses leur "
             "à ces ont ils sans peut tout même fait si était comme entre lui",
    /* es */ "el la los las de del y que en un una es por con para no se su sus al lo como "
             "más pero este esta está son fue ha muy también cuando sobre ser hay porque qué "
             "si le ya todo puede entre sin desde hasta donde usted",
    /* it */ "il lo la gli le di del della che e è un una per con non si da in sono al nel "
             "alla questo questa ma come anche più era ha dei delle cui essere mi ci ed nella "
             "degli dal dalla sul sulla quando perché se io tu noi chi",
    /* pt */ "o a os as de do da dos das e que em um uma não no na para com por se mais ao "
             "é foi seu sua mas como está são também pelo pela nos isso ele ela você ou "
             "quando seus suas numa num esta este pode",
    /* pl */ "i w z na się nie do że to jest jak o a po od co ale tak jego przez dla już jej "
             "był była są tym za ich oraz może czy także lub jeśli ten ta które który która "
             "jako być gdy tylko bez przy",
    /* ru */ "и в не на что с по это как он она я к но из у за о же так для от его был все то "
             "бы мы вы они ты если или только уже было она были когда нет да",
    /* nl */ "de het een en van in is dat op te zijn met voor niet die er aan als ook maar bij "
             "om ze wordt worden door naar uit dan nog heeft wat hij zij deze kan u je ik we "
             "geen of dit hebben werd moet tot",
};

/* Word endings typical of each language (lowercase, space-separated): a word ending so adds
 * 0.5 to the language (several endings of one language may match a word: each counts).
 * They tell short texts apart that have no function word, such as UI strings. */
static const char *const lang_endings[N_LANG] = {
    /* en */ "ing tion ed ly ness ment ish ful less ght",
    /* de */ "isch ung ungen keit heit lich chen en ern tet iert ige igen sch",
    /* fr */ "ais aise eau eaux ée ées ment tion ique eur euse oir aire ité",
    /* es */ "ción ciones dad ado ada ados adas mente ía ano ana ico ica és",
    /* it */ "zione zioni ità ato ata ati ano ana ese ico ica mente etto",
    /* pt */ "ção ções ão dade ado ada mente ês ano ana ico ica",
    /* pl */ "ski ska skie ość ych ego ów nie cja cji wy owy owa enia ania anie enie owane",
    /* ru */ "",
    /* nl */ "isch lijk heid ig en sche ijk aar ing",
};

/* Letter groups typical of each language, anywhere in a word: each occurrence adds 0.3. */
static const char *const lang_groups[N_LANG] = {
    /* en */ "th wh sh",
    /* de */ "sch tz ei ie",
    /* fr */ "eau ou oi",
    /* es */ "ll ue",
    /* it */ "zz gli cch ggi",
    /* pt */ "nh lh",
    /* pl */ "cz sz rz",
    /* ru */ "",
    /* nl */ "ij oe aa uu ui",
};

/* Letters that point to languages: a letter and its weight for each of them. */
typedef struct lang_letter {
    uint32_t cp;
    float w[N_LANG]; /* en de fr es it pt pl ru nl */
} lang_letter;

static const lang_letter lang_letters[] = {
    {0x00DF, {0, 2, 0, 0, 0, 0, 0, 0, 0}},          /* ß */
    {0x00E4, {0, 1, 0, 0, 0, 0, 0, 0, 0.2f}},       /* ä */
    {0x00F6, {0, 1, 0, 0, 0, 0, 0, 0, 0.2f}},       /* ö */
    {0x00FC, {0, 1, 0, 0, 0, 0, 0, 0, 0}},          /* ü */
    {0x00F1, {0, 0, 0, 2, 0, 0, 0, 0, 0}},          /* ñ */
    {0x00BF, {0, 0, 0, 2, 0, 0, 0, 0, 0}},          /* ¿ */
    {0x00A1, {0, 0, 0, 2, 0, 0, 0, 0, 0}},          /* ¡ */
    {0x00E3, {0, 0, 0, 0, 0, 2, 0, 0, 0}},          /* ã */
    {0x00F5, {0, 0, 0, 0, 0, 2, 0, 0, 0}},          /* õ */
    {0x00E7, {0, 0, 0.5f, 0, 0, 0.5f, 0, 0, 0}},    /* ç */
    {0x00E9, {0, 0, 0.5f, 0.2f, 0.1f, 0.2f, 0, 0, 0.1f}}, /* é */
    {0x00E8, {0, 0, 0.5f, 0, 0.5f, 0, 0, 0, 0}},    /* è */
    {0x00EA, {0, 0, 0.5f, 0, 0, 0.5f, 0, 0, 0}},    /* ê */
    {0x00E0, {0, 0, 0.5f, 0, 0.5f, 0.2f, 0, 0, 0}}, /* à */
    {0x00F9, {0, 0, 0.5f, 0, 0.5f, 0, 0, 0, 0}},    /* ù */
    {0x00EC, {0, 0, 0, 0, 1, 0, 0, 0, 0}},          /* ì */
    {0x00F2, {0, 0, 0, 0, 1, 0, 0, 0, 0}},          /* ò */
    {0x00E1, {0, 0, 0, 0.5f, 0, 0.5f, 0, 0, 0}},    /* á */
    {0x00ED, {0, 0, 0, 0.5f, 0, 0.5f, 0, 0, 0}},    /* í */
    {0x00FA, {0, 0, 0, 0.5f, 0, 0.5f, 0, 0, 0}},    /* ú */
    {0x00F3, {0, 0, 0, 0.4f, 0, 0.4f, 0.4f, 0, 0}}, /* ó */
    {0x0153, {0, 0, 1, 0, 0, 0, 0, 0, 0}},          /* œ */
    {0x0105, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ą */
    {0x0119, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ę */
    {0x0142, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ł */
    {0x015B, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ś */
    {0x017A, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ź */
    {0x017C, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ż */
    {0x0107, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ć */
    {0x0144, {0, 0, 0, 0, 0, 0, 2, 0, 0}},          /* ń */
};

/* Lowercase of the letters the nine languages use (ASCII, Latin-1, Latin Extended-A,
 * Cyrillic); anything else unchanged. */
static uint32_t to_lower(uint32_t c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 0x20;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c | 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return c + (c & 1);
    if (c >= 0x410 && c <= 0x42F) return c + 0x20;
    if (c >= 0x400 && c <= 0x40F) return c + 0x50;
    return c;
}

/* Letters make words; digits, punctuation, symbols and spaces separate them. */
static bool is_letter(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7) || (c >= 0x400 && c <= 0x4FF);
}

static size_t utf8_put(uint32_t c, char *out) {
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | c >> 12); /* letters here are all below U+10000 */
    out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[2] = (char)(0x80 | (c & 0x3F));
    return 3;
}

/* The next word of a space-separated list at *p (its length; *len 0 at the end), *p moved
 * past it and its space. */
static const char *next_word(const char **p, size_t *len) {
    const char *w = *p, *e = strchr(w, ' ');
    *len = e ? (size_t)(e - w) : strlen(w);
    *p = w + *len + (e != NULL);
    return w;
}

/* true if word[0..n) is one of the space-separated words of list. */
static bool in_list(const char *list, const char *word, size_t n) {
    size_t k;
    for (const char *p = list, *w; *p;) {
        w = next_word(&p, &k);
        if (k == n && !memcmp(w, word, n)) return true;
    }
    return false;
}

/* Adds 0.5 for each ending of list that word[0..n) ends with (and is longer than). */
static float ending_score(const char *list, const char *word, size_t n) {
    float s = 0;
    size_t k;
    for (const char *p = list, *w; *p;) {
        w = next_word(&p, &k);
        if (k < n && !memcmp(word + n - k, w, k)) s += 0.5f;
    }
    return s;
}

/* Adds 0.3 for each occurrence in word[0..n) of each group of list. */
static float group_score(const char *list, const char *word, size_t n) {
    float s = 0;
    size_t k;
    for (const char *p = list, *w; *p;) {
        w = next_word(&p, &k);
        for (size_t i = 0; i + k <= n; i++)
            if (!memcmp(word + i, w, k)) s += 0.3f;
    }
    return s;
}

/* Words of 4 letters or more ending in a or o are common in es, it and pt (cadena, punto),
 * rarer elsewhere: a little evidence that tells "de la cadena" (es) from "de la chaîne" (fr),
 * whose function words agree. (Not the short words: French "la" must not count.) */
static const float lang_vowel_ending[N_LANG] = {0, 0, 0, 0.2f, 0.2f, 0.2f, 0, 0, 0};

static void score_word(const char *word, size_t n, float *score) {
    bool vowel = n >= 4 && (word[n - 1] == 'a' || word[n - 1] == 'o');
    for (int l = 0; l < N_LANG; l++) {
        if (in_list(lang_words[l], word, n)) score[l] += 1;
        if (vowel) score[l] += lang_vowel_ending[l];
        score[l] += ending_score(lang_endings[l], word, n) + group_score(lang_groups[l], word, n);
    }
}

const char *eval_lang_identify(const char *text, size_t len) {
    float score[N_LANG] = {0};
    char word[64];
    size_t wn = 0;
    bool too_long = false; /* a word longer than the buffer is no function word */
    for (size_t i = 0; i <= len;) {
        uint32_t c = i < len ? utf8_next(text, len, &i) : (i++, ' ');
        if (is_letter(c)) {
            c = to_lower(c);
            if (c >= 0x430 && c <= 0x45F) score[7] += 1; /* Cyrillic: only ru of the nine */
            for (size_t k = 0; k < sizeof lang_letters / sizeof lang_letters[0]; k++)
                if (lang_letters[k].cp == c)
                    for (int l = 0; l < N_LANG; l++) score[l] += lang_letters[k].w[l];
            if (wn + 4 < sizeof word) wn += utf8_put(c, word + wn);
            else too_long = true;
        } else {
            if (wn && !too_long) score_word(word, wn, score);
            wn = 0;
            too_long = false;
        }
    }
    int best = -1;
    for (int l = 0; l < N_LANG; l++)
        if (score[l] > 0 && (best < 0 || score[l] > score[best])) best = l;
    return best < 0 ? NULL : eval_lang_codes[best];
}

/* ------------------------------------------------------------ corpus scores */

double eval_corpus_score(const eval_score *s, const size_t *idx, size_t n, eval_metric m) {
    if (n == 0) return 0;
    if (m == EVAL_CHRF) {
        eval_chrf_stats sum = {{0}, {0}, {0}};
        for (size_t i = 0; i < n; i++) {
            const eval_chrf_stats *c = &s[idx ? idx[i] : i].chrf;
            for (int k = 0; k < EVAL_CHRF_ORDER; k++) {
                sum.hyp[k] += c->hyp[k];
                sum.ref[k] += c->ref[k];
                sum.match[k] += c->match[k];
            }
        }
        return eval_chrf_score(&sum);
    }
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        const eval_score *e = &s[idx ? idx[i] : i];
        hits += m == EVAL_EXACT ? e->exact : e->lang_ok;
    }
    return 100.0 * (double)hits / (double)n;
}

/* splitmix64: a small, well-mixed generator, so the intervals are the same on every machine. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int double_cmp(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

bool eval_bootstrap(const eval_score *a, const eval_score *b, size_t n, eval_metric m, int rounds,
                    uint64_t seed, double *lo, double *hi) {
    *lo = *hi = 0;
    if (n == 0 || rounds < 1) return true;
    size_t *idx = malloc(n * sizeof *idx);
    double *diff = malloc((size_t)rounds * sizeof *diff);
    if (!idx || !diff) {
        free(idx);
        free(diff);
        return false;
    }
    uint64_t state = seed;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) idx[i] = (size_t)(next_random(&state) % n);
        diff[r] = eval_corpus_score(b, idx, n, m) - eval_corpus_score(a, idx, n, m);
    }
    qsort(diff, (size_t)rounds, sizeof *diff, double_cmp);
    /* the 2.5th percentile is the value with 2.5% of the resamples below it: index
     * floor(0.025 R); the 97.5th, with 2.5% above it: index ceil(0.975 R) - 1 */
    size_t i_lo = (size_t)(0.025 * rounds), i_hi = (size_t)(rounds - (int)(0.025 * rounds)) - 1;
    *lo = diff[i_lo];
    *hi = diff[i_hi];
    free(idx);
    free(diff);
    return true;
}
