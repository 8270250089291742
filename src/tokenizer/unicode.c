/* unicode.c - lookups in the generated Unicode tables. */
#include "tokenizer/unicode.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* ---------------------------------------------------------------- properties */

/* The value of the run holding cp in a table of start << 8 | value entries (the first entry
 * starts at 0). */
static unsigned run_lookup(const uint32_t *table, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n; /* the answer is in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((table[mid] >> 8) <= cp) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return table[lo] & 0xFFu;
}

el_ugc el_unicode_category(uint32_t cp) {
    if (cp > EL_UNICODE_MAX) {
        return EL_UGC_CN;
    }
    return (el_ugc)run_lookup(el_ucd_category, el_ucd_category_n, cp);
}

bool el_unicode_is_space(uint32_t cp) {
    for (size_t i = 0; i < el_ucd_white_space_n; i++) {
        if (cp >= el_ucd_white_space[i][0] && cp <= el_ucd_white_space[i][1]) {
            return true;
        }
    }
    return false;
}

unsigned el_unicode_class(uint32_t cp) {
    static const unsigned category_class[EL_UGC_COUNT] = {
        [EL_UGC_CN] = EL_UC_OTHER,
        [EL_UGC_LU] = EL_UC_LETTER | EL_UC_UPPER,
        [EL_UGC_LL] = EL_UC_LETTER | EL_UC_LOWER,
        [EL_UGC_LT] = EL_UC_LETTER | EL_UC_UPPER,
        [EL_UGC_LM] = EL_UC_LETTER,    [EL_UGC_LO] = EL_UC_LETTER,
        [EL_UGC_MN] = EL_UC_MARK,      [EL_UGC_MC] = EL_UC_MARK,      [EL_UGC_ME] = EL_UC_MARK,
        [EL_UGC_ND] = EL_UC_NUMBER,    [EL_UGC_NL] = EL_UC_NUMBER,    [EL_UGC_NO] = EL_UC_NUMBER,
        [EL_UGC_PC] = EL_UC_PUNCT,     [EL_UGC_PD] = EL_UC_PUNCT,     [EL_UGC_PS] = EL_UC_PUNCT,
        [EL_UGC_PE] = EL_UC_PUNCT,     [EL_UGC_PI] = EL_UC_PUNCT,     [EL_UGC_PF] = EL_UC_PUNCT,
        [EL_UGC_PO] = EL_UC_PUNCT,     [EL_UGC_SM] = EL_UC_SYMBOL,    [EL_UGC_SC] = EL_UC_SYMBOL,
        [EL_UGC_SK] = EL_UC_SYMBOL,    [EL_UGC_SO] = EL_UC_SYMBOL,    [EL_UGC_ZS] = EL_UC_SEPARATOR,
        [EL_UGC_ZL] = EL_UC_SEPARATOR, [EL_UGC_ZP] = EL_UC_SEPARATOR, [EL_UGC_CC] = EL_UC_OTHER,
        [EL_UGC_CF] = EL_UC_OTHER,     [EL_UGC_CS] = EL_UC_OTHER,     [EL_UGC_CO] = EL_UC_OTHER,
    };
    unsigned c = category_class[el_unicode_category(cp)];
    return el_unicode_is_space(cp) ? c | EL_UC_SPACE : c;
}

uint32_t el_unicode_tolower(uint32_t cp) {
    size_t lo = 0, hi = el_ucd_lower_n; /* first range with last >= cp */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (el_ucd_lower[mid].last < cp) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < el_ucd_lower_n) {
        const el_ucd_lower_range *r = &el_ucd_lower[lo];
        if (cp >= r->first && (cp - r->first) % r->step == 0) {
            return (uint32_t)((int32_t)cp + r->delta);
        }
    }
    return cp;
}

unsigned el_unicode_ccc(uint32_t cp) {
    return cp > EL_UNICODE_MAX ? 0 : run_lookup(el_ucd_ccc, el_ucd_ccc_n, cp);
}

/* ---------------------------------------------------------------- decomposition */

/* Hangul syllables (Unicode chapter 3.12): S = SBase + (L * VCount + V) * TCount + T. */
enum {
    HANGUL_SBASE = 0xAC00, HANGUL_LBASE = 0x1100, HANGUL_VBASE = 0x1161, HANGUL_TBASE = 0x11A7,
    HANGUL_VCOUNT = 21, HANGUL_TCOUNT = 28, HANGUL_SCOUNT = 19 * 21 * 28,
};

/* The one-level canonical decomposition of cp from the table: 0, 1 or 2 code points. */
static size_t decomp_lookup(uint32_t cp, uint32_t pair[2]) {
    size_t lo = 0, hi = el_ucd_decomp_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t key = (uint32_t)(el_ucd_decomp[mid] >> 42);
        if (key == cp) {
            pair[0] = (uint32_t)(el_ucd_decomp[mid] >> 21 & 0x1FFFFF);
            pair[1] = (uint32_t)(el_ucd_decomp[mid] & 0x1FFFFF);
            return pair[1] ? 2 : 1;
        }
        if (key < cp) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return 0;
}

/* Appends the full decomposition of cp to out[*n]; the generator checked that it fits. */
static void decompose_into(uint32_t cp, uint32_t *out, size_t *n) {
    if (cp >= HANGUL_SBASE && cp < HANGUL_SBASE + HANGUL_SCOUNT) {
        uint32_t s = cp - HANGUL_SBASE;
        out[(*n)++] = HANGUL_LBASE + s / (HANGUL_VCOUNT * HANGUL_TCOUNT);
        out[(*n)++] = HANGUL_VBASE + s % (HANGUL_VCOUNT * HANGUL_TCOUNT) / HANGUL_TCOUNT;
        if (s % HANGUL_TCOUNT) {
            out[(*n)++] = HANGUL_TBASE + s % HANGUL_TCOUNT;
        }
        return;
    }
    uint32_t pair[2];
    size_t k = decomp_lookup(cp, pair);
    if (k == 0) {
        out[(*n)++] = cp;
        return;
    }
    for (size_t i = 0; i < k; i++) {
        decompose_into(pair[i], out, n);
    }
}

/* Canonical ordering: a stable sort by combining class of each run of non-starters. */
static void canonical_order(uint32_t *cps, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint32_t c = cps[i];
        unsigned cc = el_unicode_ccc(c);
        if (cc == 0) {
            continue;
        }
        size_t j = i;
        while (j > 0 && el_unicode_ccc(cps[j - 1]) > cc) {
            cps[j] = cps[j - 1];
            j--;
        }
        cps[j] = c;
    }
}

size_t el_unicode_decompose(uint32_t cp, uint32_t out[EL_UNICODE_MAX_DECOMP]) {
    size_t n = 0;
    decompose_into(cp, out, &n);
    canonical_order(out, n);
    return n;
}

/* In el_utf8_nfd's code point buffer, an invalid input byte b is kept as NFD_RAW | b. */
#define NFD_RAW 0x80000000u

el_status el_utf8_nfd(const char *s, size_t len, char **out, size_t *out_len) {
    /* Each input byte yields at most 4 code points (a 1-byte code point does not decompose, a
     * 2-byte one into at most 4), each at most 4 bytes long in the output. */
    if (len > SIZE_MAX / 16 - 1) {
        return el_error(EL_ERR_INVALID_ARG, "NFD: input of %zu bytes is too large", len);
    }
    uint32_t *cps = malloc((len + 1) * 4 * sizeof *cps);
    char *buf = malloc(len * 16 + 1);
    if (!cps || !buf) {
        free(cps);
        free(buf);
        return el_error(EL_ERR_NOMEM, "NFD: out of memory for %zu bytes of text", len);
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t step = el_utf8_decode(s + i, len - i, &cp);
        if (cp == EL_UNICODE_REPLACEMENT && step == 1) {
            cps[n++] = NFD_RAW | (unsigned char)s[i];
        } else {
            decompose_into(cp, cps, &n);
        }
        i += step;
    }
    /* Marks may move only within a run of non-starters; an invalid byte counts as a starter
     * (its ccc is 0 as it is above U+10FFFF). */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && el_unicode_ccc(cps[j]) != 0) {
            j++;
        }
        canonical_order(cps + i, j - i);
        i = j + 1;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (cps[i] & NFD_RAW) {
            buf[o++] = (char)(cps[i] & 0xFF);
        } else {
            o += el_utf8_encode(cps[i], buf + o);
        }
    }
    free(cps);
    buf[o] = '\0';
    *out = buf;
    *out_len = o;
    return EL_OK;
}
