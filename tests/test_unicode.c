/* test_unicode.c - UTF-8 coding and Unicode properties against hand-checked values from the
 * Unicode standard (UnicodeData.txt entries, RFC 3629 for UTF-8, chapter 3.12 for Hangul). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tokenizer/unicode.h"

static int test_utf8_roundtrip_all(void) {
    /* every scalar value survives encode/decode, with the RFC 3629 lengths */
    for (uint32_t cp = 0; cp <= EL_UNICODE_MAX; cp++) {
        char b[4];
        size_t n = el_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            CHECK(n == 0);
            continue;
        }
        CHECK(n == (cp < 0x80 ? 1u : cp < 0x800 ? 2u : cp < 0x10000 ? 3u : 4u));
        CHECK(el_utf8_seq_len((unsigned char)b[0]) == n);
        uint32_t back = 0;
        CHECK(el_utf8_decode(b, n, &back) == n && back == cp);
    }
    char b[4];
    CHECK(el_utf8_encode(0x110000, b) == 0);
    return TEST_PASS;
}

static int test_utf8_known_bytes(void) {
    char b[4];
    CHECK(el_utf8_encode(0xE9, b) == 2 && memcmp(b, "\xC3\xA9", 2) == 0);       /* é */
    CHECK(el_utf8_encode(0x20AC, b) == 3 && memcmp(b, "\xE2\x82\xAC", 3) == 0); /* € */
    CHECK(el_utf8_encode(0x1F600, b) == 4 && memcmp(b, "\xF0\x9F\x98\x80", 4) == 0);
    return TEST_PASS;
}

static int test_utf8_invalid(void) {
    /* each invalid sequence decodes as one U+FFFD of length 1 */
    static const char *const bad[] = {
        "\x80",             /* lone continuation byte */
        "\xC0\x80",         /* overlong NUL */
        "\xC1\xBF",         /* overlong */
        "\xE0\x80\xAF",     /* overlong '/' */
        "\xED\xA0\x80",     /* surrogate U+D800 */
        "\xF4\x90\x80\x80", /* U+110000 */
        "\xF5\x80\x80\x80", /* lead byte beyond range */
        "\xFF",
        "\xC3",             /* truncated (len 1 below) */
        "\xE2\x82",         /* truncated */
        "\xE2\x28\xA1",     /* bad continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t cp = 0;
        CHECK(el_utf8_decode(bad[i], strlen(bad[i]), &cp) == 1);
        CHECK(cp == EL_UNICODE_REPLACEMENT);
    }
    uint32_t cp = 0;
    CHECK(el_utf8_decode("\xEF\xBF\xBD", 3, &cp) == 3 && cp == 0xFFFD); /* a real U+FFFD */
    return TEST_PASS;
}

static int test_categories(void) {
    static const struct { uint32_t cp; el_ugc gc; } cases[] = {
        {'A', EL_UGC_LU},     {'z', EL_UGC_LL},     {0x01C5, EL_UGC_LT}, /* Dž */
        {0x02B0, EL_UGC_LM},  {0x4E2D, EL_UGC_LO},  {0x0301, EL_UGC_MN}, /* 中, acute */
        {0x0903, EL_UGC_MC},  {0x20DD, EL_UGC_ME},  {'7', EL_UGC_ND},
        {0x216B, EL_UGC_NL},  {0x00BD, EL_UGC_NO},  {'_', EL_UGC_PC},    /* Ⅻ, ½ */
        {'-', EL_UGC_PD},     {'(', EL_UGC_PS},     {')', EL_UGC_PE},
        {0x00AB, EL_UGC_PI},  {0x00BB, EL_UGC_PF},  {'!', EL_UGC_PO},    /* « » */
        {'+', EL_UGC_SM},     {'$', EL_UGC_SC},     {'^', EL_UGC_SK},
        {0x00A9, EL_UGC_SO},  {0x1F600, EL_UGC_SO}, {' ', EL_UGC_ZS},    /* ©, emoji */
        {0x2028, EL_UGC_ZL},  {0x2029, EL_UGC_ZP},  {0, EL_UGC_CC},
        {0x200B, EL_UGC_CF},  {0xD800, EL_UGC_CS},  {0xE000, EL_UGC_CO},
        {0x0378, EL_UGC_CN},  {0x10FFFF, EL_UGC_CN}, {0x10FFFD, EL_UGC_CO},
        {0x0416, EL_UGC_LU},  {0x0436, EL_UGC_LL},  {0xAC00, EL_UGC_LO}, /* Ж ж 가 */
        {0x0660, EL_UGC_ND},  {0x3001, EL_UGC_PO},  {0x110000, EL_UGC_CN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (el_unicode_category(cases[i].cp) != cases[i].gc) {
            test_note("U+%04X: category %d, expected %d", (unsigned)cases[i].cp,
                      el_unicode_category(cases[i].cp), cases[i].gc);
            return TEST_FAIL;
        }
    }
    CHECK(el_unicode_class('a') == (EL_UC_LETTER | EL_UC_LOWER));
    CHECK(el_unicode_class(0x01C5) == (EL_UC_LETTER | EL_UC_UPPER)); /* Dž, titlecase */
    CHECK(el_unicode_class(0x4E2D) == EL_UC_LETTER);
    CHECK(el_unicode_class(0x0301) == EL_UC_MARK);
    CHECK(el_unicode_class(' ') == (EL_UC_SEPARATOR | EL_UC_SPACE));
    CHECK(el_unicode_class('\n') == (EL_UC_OTHER | EL_UC_SPACE));
    CHECK(el_unicode_class(0x00A0) == (EL_UC_SEPARATOR | EL_UC_SPACE));
    CHECK(el_unicode_class(0x0378) == EL_UC_OTHER);
    return TEST_PASS;
}

static int test_white_space(void) {
    static const uint32_t yes[] = {'\t', '\n', 0x0B, 0x0C, '\r', ' ', 0x85, 0xA0, 0x1680,
                                   0x2000, 0x2005, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
                                   0x3000};
    static const uint32_t no[] = {0x08, 0x0E, 0x1C, 0x1F, 'a', 0x180E, 0x200B, 0x2060, 0xFEFF};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        CHECK(el_unicode_is_space(yes[i]));
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        CHECK(!el_unicode_is_space(no[i]));
    }
    return TEST_PASS;
}

static int test_tolower(void) {
    static const uint32_t pairs[][2] = {
        {'A', 'a'},        {'Z', 'z'},       {'a', 'a'},       {'1', '1'},
        {0xC9, 0xE9},      {0xDE, 0xFE},     {0xD7, 0xD7},     /* É é, Þ þ, × unchanged */
        {0x100, 0x101},    {0x101, 0x101},   {0x12E, 0x12F},   /* Ā ā, Į į */
        {0x130, 'i'},      {0x178, 0xFF},    {0x3A3, 0x3C3},   /* İ → i, Ÿ ÿ, Σ σ */
        {0x410, 0x430},    {0x401, 0x451},   {0x42F, 0x44F},   /* А а, Ё ё, Я я */
        {0x1E9E, 0xDF},    {0x2160, 0x2170}, {0xFF21, 0xFF41}, /* ẞ ß, Ⅰ ⅰ, Ａ ａ */
        {0x10400, 0x10428}, {0x1C5, 0x1C6},                     /* Deseret, Dž dž */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (el_unicode_tolower(pairs[i][0]) != pairs[i][1]) {
            test_note("tolower(U+%04X) = U+%04X, expected U+%04X", (unsigned)pairs[i][0],
                      (unsigned)el_unicode_tolower(pairs[i][0]), (unsigned)pairs[i][1]);
            return TEST_FAIL;
        }
    }
    return TEST_PASS;
}

static int test_decompose(void) {
    static const struct { uint32_t cp; size_t n; uint32_t d[4]; } cases[] = {
        {'a', 1, {'a'}},
        {0xE9, 2, {'e', 0x301}},                /* é */
        {0x1E69, 3, {'s', 0x323, 0x307}},       /* ṩ: below (220) before above (230) */
        {0x1EC7, 3, {'e', 0x323, 0x302}},       /* ệ */
        {0x212B, 2, {'A', 0x30A}},              /* Angstrom sign -> Å -> A + ring */
        {0xAC00, 2, {0x1100, 0x1161}},          /* 가 */
        {0xAC01, 3, {0x1100, 0x1161, 0x11A8}},  /* 각 */
        {0xD7A3, 3, {0x1112, 0x1175, 0x11C2}},  /* 힣, the last syllable */
        {0xFB01, 1, {0xFB01}},                  /* ﬁ: compatibility only, kept */
        {0x1F82, 4, {0x3B1, 0x313, 0x300, 0x345}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t d[EL_UNICODE_MAX_DECOMP];
        size_t n = el_unicode_decompose(cases[i].cp, d);
        CHECK(n == cases[i].n);
        CHECK(memcmp(d, cases[i].d, n * sizeof d[0]) == 0);
    }
    CHECK(el_unicode_ccc(0x301) == 230 && el_unicode_ccc(0x323) == 220 && el_unicode_ccc('a') == 0);
    return TEST_PASS;
}

static int test_nfd_string(void) {
    char *out = NULL;
    size_t n = 0;
    /* "Café" + a + acute + dot below (reordered) + invalid byte + Ω (Ohm sign -> Greek Omega) */
    const char in[] = "Caf\xC3\xA9 a\xCC\x81\xCC\xA3\xFF\xE2\x84\xA6";
    CHECK(el_utf8_nfd(in, sizeof in - 1, &out, &n) == EL_OK);
    const char want[] = "Cafe\xCC\x81 a\xCC\xA3\xCC\x81\xFF\xCE\xA9";
    CHECK(n == sizeof want - 1 && memcmp(out, want, n) == 0 && out[n] == '\0');
    free(out);
    CHECK(el_utf8_nfd("", 0, &out, &n) == EL_OK && n == 0);
    free(out);
    return TEST_PASS;
}

int main(void) {
    run_test("utf8_roundtrip_all", test_utf8_roundtrip_all);
    run_test("utf8_known_bytes", test_utf8_known_bytes);
    run_test("utf8_invalid", test_utf8_invalid);
    run_test("categories", test_categories);
    run_test("white_space", test_white_space);
    run_test("tolower", test_tolower);
    run_test("decompose", test_decompose);
    run_test("nfd_string", test_nfd_string);
    return tests_exit_code();
}
