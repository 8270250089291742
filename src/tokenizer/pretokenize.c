/* pretokenize.c - the pre-tokenizer regexes of tokenizer.ggml.pre, as hand-written matchers.
 *
 * The regexes are those of each model's tokenizer.json, in the form llama.cpp's llama-vocab.cpp
 * lists them. A matcher implements one regex: given a position, it returns the length of the
 * match the regex would find there (leftmost alternative first, greedy, with backtracking where
 * it matters), or 0. A stage runs a matcher over one piece of text like a regex iterator does:
 * each match becomes a piece, and so does the unmatched text between matches. Matching never
 * looks past the end of the piece (a lookahead there sees the end of the input).
 *
 * Where llama.cpp only approximates a regex (it runs std::regex over text whose code points
 * were collapsed to one byte per category), we follow the regex, as the model's own tokenizer
 * does: the cased letter classes of gpt-4o and tekken, and the non-ASCII spaces that fall in
 * the deepseek literal ranges. Each matcher was checked against Python's `regex` module on
 * random text mixing the classes involved. */
#include "tokenizer/pretokenize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

/* The text as code points: cp[i] starts at byte off[i] and has the EL_UC_* bits cls[i]. */
typedef struct cptext {
    uint32_t *cp;
    uint16_t *cls;
    size_t *off; /* n + 1 entries */
    size_t n;
} cptext;

/* Returns the length of the match at pos (ending at most at end), or 0 and, in *skip, how many
 * positions from pos on cannot start a match either (it is 1 on entry). */
typedef size_t (*matcher)(const cptext *t, size_t pos, size_t end, size_t *skip);

typedef bool (*cp_pred)(const cptext *t, size_t i);

static bool is_space(const cptext *t, size_t i) { return t->cls[i] & EL_UC_SPACE; }
static bool is_letter(const cptext *t, size_t i) { return t->cls[i] & EL_UC_LETTER; }
static bool is_number(const cptext *t, size_t i) { return t->cls[i] & EL_UC_NUMBER; }
static bool is_punct(const cptext *t, size_t i) { return t->cls[i] & EL_UC_PUNCT; }
static bool is_crlf(const cptext *t, size_t i) { return t->cp[i] == '\r' || t->cp[i] == '\n'; }

/* [^\s\p{L}\p{N}] */
static bool is_other(const cptext *t, size_t i) {
    return !(t->cls[i] & (EL_UC_SPACE | EL_UC_LETTER | EL_UC_NUMBER));
}

/* The number of code points from pos on (at most max, not past end) that satisfy pred. */
static size_t run_max(const cptext *t, size_t pos, size_t end, cp_pred pred, size_t max) {
    size_t n = 0;
    while (pos + n < end && n < max && pred(t, pos + n)) {
        n++;
    }
    return n;
}

static size_t run(const cptext *t, size_t pos, size_t end, cp_pred pred) {
    return run_max(t, pos, end, pred, SIZE_MAX);
}

/* \s?X+ : a greedy optional space is given back when X+ cannot follow it. */
static size_t space_run(const cptext *t, size_t pos, size_t end, cp_pred pred) {
    if (is_space(t, pos) && pos + 1 < end && pred(t, pos + 1)) {
        return 1 + run(t, pos + 1, end, pred);
    }
    return run(t, pos, end, pred);
}

static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's|'t|'re|'ve|'m|'ll|'d, case-insensitive for ASCII letters if fold ((?i:...) in llama3). */
static size_t contraction(const cptext *t, size_t pos, size_t end, bool fold) {
    if (t->cp[pos] != '\'' || pos + 1 >= end) {
        return 0;
    }
    uint32_t c1 = fold ? ascii_lower(t->cp[pos + 1]) : t->cp[pos + 1];
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        return 2;
    }
    if (pos + 2 >= end) {
        return 0;
    }
    uint32_t c2 = fold ? ascii_lower(t->cp[pos + 2]) : t->cp[pos + 2];
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        return 3;
    }
    return 0;
}

/* \s+(?!\S)|\s+ over a run of w spaces at pos: a run followed by a non-space leaves its last
 * space to start the next word (" ?\p{L}+" and friends), unless it is the only one. */
static size_t space_tail(size_t pos, size_t w, size_t end) {
    return w > 1 && pos + w < end ? w - 1 : w;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (llama.cpp's list omits the final \s+; the text it would match is left unmatched there, which
 * makes the same piece.) */
static size_t match_gpt2(const cptext *t, size_t pos, size_t end, size_t *skip) {
    size_t n = contraction(t, pos, end, false);
    if (n) {
        return n;
    }
    size_t p = pos; /* after the optional space */
    if (t->cp[pos] == ' ' && pos + 1 < end && !is_space(t, pos + 1)) {
        p = pos + 1;
    }
    if (is_letter(t, p)) {
        return p - pos + run(t, p, end, is_letter);
    }
    if (is_number(t, p)) {
        return p - pos + run(t, p, end, is_number);
    }
    if (is_other(t, p)) {
        return p - pos + run(t, p, end, is_other);
    }
    return space_tail(pos, run(t, pos, end, is_space), end);
}

/* llama3 (max_digits 3) and qwen2 (1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3_like(const cptext *t, size_t pos, size_t end, size_t max_digits) {
    size_t n = contraction(t, pos, end, true);
    if (n) {
        return n;
    }
    if (is_letter(t, pos)) {
        return run(t, pos, end, is_letter);
    }
    if (!is_crlf(t, pos) && !is_number(t, pos) && pos + 1 < end && is_letter(t, pos + 1)) {
        return 1 + run(t, pos + 1, end, is_letter);
    }
    if (is_number(t, pos)) {
        return run_max(t, pos, end, is_number, max_digits);
    }
    size_t p = pos;
    if (t->cp[pos] == ' ' && pos + 1 < end && is_other(t, pos + 1)) {
        p = pos + 1;
    }
    if (is_other(t, p)) {
        p += run(t, p, end, is_other);
        return p + run(t, p, end, is_crlf) - pos;
    }
    /* a space: \s*[\r\n]+ backtracks to end after the last CR or LF of the run */
    size_t w = run(t, pos, end, is_space);
    for (size_t k = w; k > 0; k--) {
        if (is_crlf(t, pos + k - 1)) {
            return k;
        }
    }
    return space_tail(pos, w, end);
}

static size_t match_llama3(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return match_llama3_like(t, pos, end, 3);
}

static size_t match_qwen2(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return match_llama3_like(t, pos, end, 1);
}

/* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}]: letters that may start a word
 * (all but lowercase) and that may continue one (all but upper- and titlecase). */
static bool is_upper_ish(const cptext *t, size_t i) {
    return ((t->cls[i] & EL_UC_LETTER) && !(t->cls[i] & EL_UC_LOWER)) || (t->cls[i] & EL_UC_MARK);
}

static bool is_lower_ish(const cptext *t, size_t i) {
    return ((t->cls[i] & EL_UC_LETTER) && !(t->cls[i] & EL_UC_UPPER)) || (t->cls[i] & EL_UC_MARK);
}

/* [^\r\n\p{L}\p{N}] */
static bool is_word_lead(const cptext *t, size_t i) {
    return !is_crlf(t, i) && !(t->cls[i] & (EL_UC_LETTER | EL_UC_NUMBER));
}

/* U*W+ at pos (U, W: is_upper_ish, is_lower_ish), as a backtracking regex finds it: U* takes its
 * longest run, then gives back code points until one of them can start W+, which is greedy.
 * Returns the end, or 0 if there is no match. */
static size_t upper_star_lower_plus(const cptext *t, size_t pos, size_t end) {
    size_t u = run(t, pos, end, is_upper_ish);
    if (pos + u < end && is_lower_ish(t, pos + u)) {
        return pos + u + run(t, pos + u, end, is_lower_ish);
    }
    /* the code point after the U run is no W, so W+ is the last W inside the run alone */
    for (size_t k = u; k > 0; k--) {
        if (is_lower_ish(t, pos + k - 1)) return pos + k;
    }
    return 0;
}

/* U+W* at pos; the W run can only add lowercase letters, as U took everything else. */
static size_t upper_plus_lower_star(const cptext *t, size_t pos, size_t end) {
    size_t u = run(t, pos, end, is_upper_ish);
    return u ? pos + u + run(t, pos + u, end, is_lower_ish) : 0;
}

/* gpt-4o (o200k; contractions and digits in threes) and tekken (neither, single digits):
 * [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...|'d)?|
 * [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...|'d)?|
 * \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * This follows the regex, casing of non-ASCII letters included; llama.cpp approximates the
 * cased classes by [^a-z] and [^A-Z] and so splits e.g. "привЕТ" differently. */
static size_t match_o200k_like(const cptext *t, size_t pos, size_t end, bool contractions,
                               size_t max_digits) {
    /* the optional leading code point is tried first taken, then left out; only then the
     * second alternative, the same way */
    bool lead = is_word_lead(t, pos) && pos + 1 < end;
    size_t e = lead ? upper_star_lower_plus(t, pos + 1, end) : 0;
    if (!e) e = upper_star_lower_plus(t, pos, end);
    if (!e && lead) e = upper_plus_lower_star(t, pos + 1, end);
    if (!e) e = upper_plus_lower_star(t, pos, end);
    if (e) {
        return e - pos + (contractions && e < end ? contraction(t, e, end, true) : 0);
    }
    if (is_number(t, pos)) {
        return run_max(t, pos, end, is_number, max_digits);
    }
    size_t p = pos;
    if (t->cp[pos] == ' ' && pos + 1 < end && is_other(t, pos + 1)) {
        p = pos + 1;
    }
    if (is_other(t, p)) {
        p += run(t, p, end, is_other);
        while (p < end && (is_crlf(t, p) || t->cp[p] == '/')) p++;
        return p - pos;
    }
    size_t w = run(t, pos, end, is_space);
    for (size_t k = w; k > 0; k--) {
        if (is_crlf(t, pos + k - 1)) return k;
    }
    return space_tail(pos, w, end);
}

static size_t match_gpt4o(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return match_o200k_like(t, pos, end, true, 3);
}

static size_t match_tekken(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return match_o200k_like(t, pos, end, false, 1);
}

/* [\p{P}\$\+<=>\^~\|]+ (default) and [\p{P}\$\+<=>\^~\|`]+ (falcon) */
static bool ascii_in(uint32_t cp, const char *set) {
    return cp != 0 && cp < 0x80 && strchr(set, (int)cp) != NULL;
}

static bool is_punct_default(const cptext *t, size_t i) {
    return is_punct(t, i) || ascii_in(t->cp[i], "$+<=>^~|");
}

static bool is_punct_falcon(const cptext *t, size_t i) {
    return is_punct(t, i) || ascii_in(t->cp[i], "$+<=>^~|`");
}

static size_t match_punct_default(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run(t, pos, end, is_punct_default);
}

static size_t match_punct_falcon(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run(t, pos, end, is_punct_falcon);
}

/* \p{N} */
static size_t match_number(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return is_number(t, pos) ? 1 : 0;
}

/* \p{N}+ */
static size_t match_numbers(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run(t, pos, end, is_number);
}

/* [0-9][0-9][0-9] */
static size_t match_ascii_digits3(const cptext *t, size_t pos, size_t end, size_t *skip) {
    if (end - pos < 3) {
        return 0;
    }
    for (size_t i = pos; i < pos + 3; i++) {
        if (t->cp[i] < '0' || t->cp[i] > '9') {
            return 0;
        }
    }
    return 3;
}

/* [\r\n] */
static size_t match_crlf(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return is_crlf(t, pos) ? 1 : 0;
}

/* \s+$ : only a run of spaces that reaches the end; no position inside a shorter run can start
 * a match either. */
static size_t match_trailing_space(const cptext *t, size_t pos, size_t end, size_t *skip) {
    size_t w = run(t, pos, end, is_space);
    if (w > 0 && pos + w == end) {
        return w;
    }
    *skip = w > 0 ? w : 1;
    return 0;
}

/* \s?\p{L}+ and \s?\p{P}+ (deepseek-coder) */
static size_t match_space_letters(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return space_run(t, pos, end, is_letter);
}

static size_t match_space_punct(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return space_run(t, pos, end, is_punct);
}

/* Inclusive code point ranges, sorted, for the literal classes of the deepseek regexes. */
typedef struct cp_range {
    uint32_t first, last;
} cp_range;

static bool in_ranges(const cp_range *r, size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].last < cp) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && cp >= r[lo].first;
}

/* deepseek-llm's letter class [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃], written out as code points: mostly
 * the cased letters of some Unicode version, but not exactly (Armenian small letters and
 * Georgian Nuskhuri are not in it), so it is a list rather than a category test. */
static const cp_range deepseek_letters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA},
    {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377},
    {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C},
    {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF},
    {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D},
    {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC},
    {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113},
    {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
    {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE},
    {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787},
    {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

/* deepseek-llm's [!-/:-~！-／：-～‘-‟　-。] */
static const cp_range deepseek_punct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E},
};

/* [一-龥ࠀ-一가-퟿] of both deepseek pre-tokenizers: U+4E00-9FA5, U+0800-4E00, U+AC00-D7FF.
 * (llama.cpp runs it on text whose non-ASCII spaces were replaced by U+000B, so it does not
 * match U+2000-200A, U+3000 and the like, which are in the range; we follow the regex.) */
static const cp_range deepseek_cjk[] = {{0x0800, 0x9FA5}, {0xAC00, 0xD7FF}};

static bool is_deepseek_letter(const cptext *t, size_t i) {
    return in_ranges(deepseek_letters, sizeof deepseek_letters / sizeof deepseek_letters[0],
                     t->cp[i]);
}

static bool is_deepseek_punct(const cptext *t, size_t i) {
    return in_ranges(deepseek_punct, sizeof deepseek_punct / sizeof deepseek_punct[0], t->cp[i]);
}

static bool is_deepseek_cjk(const cptext *t, size_t i) {
    return in_ranges(deepseek_cjk, sizeof deepseek_cjk / sizeof deepseek_cjk[0], t->cp[i]);
}

static size_t match_deepseek_letters(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return space_run(t, pos, end, is_deepseek_letter);
}

static size_t match_deepseek_punct(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return space_run(t, pos, end, is_deepseek_punct);
}

static size_t match_deepseek_cjk(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run(t, pos, end, is_deepseek_cjk);
}

/* deepseek-v3: \p{N}{1,3}, then [一-龥぀-ゟ゠-ヿ]+ (U+4E00-9FA5, U+3040-30FF), then
 * [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_numbers3(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run_max(t, pos, end, is_number, 3);
}

static bool is_kanji_kana(const cptext *t, size_t i) {
    return (t->cp[i] >= 0x4E00 && t->cp[i] <= 0x9FA5) || (t->cp[i] >= 0x3040 && t->cp[i] <= 0x30FF);
}

static size_t match_kanji_kana(const cptext *t, size_t pos, size_t end, size_t *skip) {
    return run(t, pos, end, is_kanji_kana);
}

static bool is_ascii_letter(const cptext *t, size_t i) {
    return (t->cp[i] >= 'a' && t->cp[i] <= 'z') || (t->cp[i] >= 'A' && t->cp[i] <= 'Z');
}

static bool is_punct_symbol(const cptext *t, size_t i) {
    return t->cls[i] & (EL_UC_PUNCT | EL_UC_SYMBOL);
}

static bool is_letter_mark(const cptext *t, size_t i) {
    return t->cls[i] & (EL_UC_LETTER | EL_UC_MARK);
}

static size_t match_deepseek_v3(const cptext *t, size_t pos, size_t end, size_t *skip) {
    uint32_t c = t->cp[pos];
    bool ascii_ps = c > 0x20 && c < 0x7F && !is_ascii_letter(t, pos) && !(c >= '0' && c <= '9');
    if (ascii_ps && pos + 1 < end && is_ascii_letter(t, pos + 1)) {
        return 1 + run(t, pos + 1, end, is_ascii_letter);
    }
    bool lead = !is_crlf(t, pos) && !(t->cls[pos] & (EL_UC_LETTER | EL_UC_PUNCT | EL_UC_SYMBOL));
    if (lead && pos + 1 < end && is_letter_mark(t, pos + 1)) {
        return 1 + run(t, pos + 1, end, is_letter_mark);
    }
    if (is_letter_mark(t, pos)) {
        return run(t, pos, end, is_letter_mark);
    }
    size_t p = pos;
    if (c == ' ' && pos + 1 < end && is_punct_symbol(t, pos + 1)) {
        p = pos + 1;
    }
    if (is_punct_symbol(t, p)) {
        p += run(t, p, end, is_punct_symbol);
        return p + run(t, p, end, is_crlf) - pos;
    }
    size_t w = run(t, pos, end, is_space);
    for (size_t k = w; k > 0; k--) {
        if (is_crlf(t, pos + k - 1)) return k;
    }
    return space_tail(pos, w, end); /* 0 when pos is no space: nothing matches there */
}

/* ---------------------------------------------------------------- the table */

#define MAX_STAGES 6

struct el_pretok {
    const char *const *names; /* NULL-terminated; the tokenizer.ggml.pre values it serves */
    matcher stages[MAX_STAGES];  /* applied in order; NULL-terminated unless full */
    bool ignore_merges;
    bool bos_by_default; /* el_pretok_bos_by_default */
};

static const char *const names_default[] = {"default", NULL};
static const char *const names_gpt2[] = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
                                         "jina-v2-es", "jina-v2-de", "mpt", "olmo", "jais", NULL};
static const char *const names_llama3[] = {"llama3", "llama-v3", "llama-bpe", "falcon3",
                                           "falcon-h1", "pixtral", "midm-2.0", "lfm2", NULL};
static const char *const names_dbrx[] = {"dbrx", "smaug-bpe", NULL};
static const char *const names_qwen2[] = {"qwen2", "deepseek-r1-qwen", "kormo", "megrez",
                                          "stablelm2", NULL};
static const char *const names_starcoder[] = {"starcoder", "refact", "command-r", "smollm",
                                              "codeshell", "exaone", "minerva-7b", NULL};
static const char *const names_falcon[] = {"falcon", NULL};
static const char *const names_deepseek_llm[] = {"deepseek-llm", NULL};
static const char *const names_deepseek_coder[] = {"deepseek-coder", NULL};
static const char *const names_gpt4o[] = {"gpt-4o", "llama4", "minimax-m2", NULL};
static const char *const names_tekken[] = {"tekken", NULL};
static const char *const names_deepseek_v3[] = {"deepseek-v3", NULL};

static const el_pretok pretoks[] = {
    {names_default, {match_punct_default, match_gpt2, match_numbers, match_ascii_digits3}, false,
     false},
    {names_gpt2, {match_gpt2}, false, false},
    {names_llama3, {match_llama3}, true, true},
    {names_dbrx, {match_llama3}, false, false},
    {names_qwen2, {match_qwen2}, false, false},
    {names_starcoder, {match_number, match_gpt2}, false, false},
    {names_falcon, {match_punct_falcon, match_gpt2, match_ascii_digits3}, false, false},
    {names_deepseek_llm,
     {match_crlf, match_deepseek_letters, match_deepseek_punct, match_trailing_space,
      match_deepseek_cjk, match_numbers},
     false, false},
    {names_deepseek_coder,
     {match_crlf, match_space_letters, match_space_punct, match_deepseek_cjk, match_number},
     false, false},
    {names_gpt4o, {match_gpt4o}, false, false},
    {names_tekken, {match_tekken}, true, false},
    {names_deepseek_v3, {match_numbers3, match_kanji_kana, match_deepseek_v3}, false, false},
};

el_status el_pretok_find(const char *name, const el_pretok **out) {
    for (size_t i = 0; i < sizeof pretoks / sizeof pretoks[0]; i++) {
        for (const char *const *n = pretoks[i].names; *n; n++) {
            if (strcmp(*n, name) == 0) {
                *out = &pretoks[i];
                return EL_OK;
            }
        }
    }
    return el_error(EL_ERR_UNSUPPORTED, "pre-tokenizer '%s' (tokenizer.ggml.pre) is not supported",
                    name);
}

bool el_pretok_ignore_merges(const el_pretok *p) { return p->ignore_merges; }

bool el_pretok_bos_by_default(const el_pretok *p) { return p->bos_by_default; }

/* ---------------------------------------------------------------- splitting */

/* Runs m over [a, b) like a regex iterator, marking a cut before every match and after it. */
static void run_stage(const cptext *t, matcher m, size_t a, size_t b, bool *cut) {
    for (size_t pos = a; pos < b;) {
        size_t skip = 1;
        size_t n = m(t, pos, b, &skip);
        if (n == 0) {
            pos += skip;
            continue;
        }
        cut[pos] = cut[pos + n] = true;
        pos += n;
    }
}

static el_status words_push(el_words *w, size_t end) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *ends = realloc(w->ends, cap * sizeof *ends);
        if (!ends) {
            return el_error(EL_ERR_NOMEM, "pre-tokenizer: out of memory for %zu words", cap);
        }
        w->ends = ends;
        w->cap = cap;
    }
    w->ends[w->n++] = end;
    return EL_OK;
}

el_status el_pretok_split(const el_pretok *p, const char *text, size_t len, el_words *out) {
    out->n = 0;
    if (len == 0) {
        return EL_OK;
    }
    cptext t = {
        .cp = malloc(len * sizeof *t.cp),
        .cls = malloc(len * sizeof *t.cls),
        .off = malloc((len + 1) * sizeof *t.off),
    };
    bool *cut = calloc(len + 1, sizeof *cut);
    el_status st = EL_OK;
    if (!t.cp || !t.cls || !t.off || !cut) {
        st = el_error(EL_ERR_NOMEM, "pre-tokenizer: out of memory for %zu bytes of text", len);
        goto done;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = el_utf8_decode(text + i, len - i, &cp);
        t.cp[t.n] = cp;
        t.cls[t.n] = (uint16_t)el_unicode_class(cp);
        t.off[t.n++] = i;
        i += k;
    }
    t.off[t.n] = len;
    cut[0] = cut[t.n] = true;
    for (size_t s = 0; s < MAX_STAGES && p->stages[s]; s++) {
        /* the stage only adds cuts inside the piece it works on, so the next piece is found
         * from the old cuts */
        for (size_t a = 0; a < t.n;) {
            size_t b = a + 1;
            while (!cut[b]) {
                b++;
            }
            run_stage(&t, p->stages[s], a, b, cut);
            a = b;
        }
    }
    for (size_t i = 1; i <= t.n && st == EL_OK; i++) {
        if (cut[i]) {
            st = words_push(out, t.off[i]);
        }
    }
done:
    free(t.cp);
    free(t.cls);
    free(t.off);
    free(cut);
    return st;
}

void el_words_free(el_words *w) {
    free(w->ends);
    *w = (el_words){0};
}
