/* test_json.c - the JSON parser against hand-written JSONTestSuite-style cases (y_: must parse to
 * the values written next to them; n_: must be refused) and the string writer against
 * hand-escaped output. UTF-8 bytes of escapes are computed by hand from the code points. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "formats/json.h"
#include "testutil.h"

static el_json_doc *parse(const char *text) {
    el_json_doc *doc = NULL;
    if (el_json_parse(text, strlen(text), "t.json", &doc) != EL_OK)
        test_note("unexpected error: %s", el_last_error());
    return doc;
}

static int test_scalars(void) {
    static const struct { const char *text; el_json_kind kind; } cases[] = {
        {"null", EL_JSON_NULL},     {" true ", EL_JSON_BOOL},    {"false", EL_JSON_BOOL},
        {"\"a\"", EL_JSON_STRING},  {"0", EL_JSON_NUMBER},       {"[]", EL_JSON_ARRAY},
        {"{}", EL_JSON_OBJECT},     {"\t\r\n [ ]\n", EL_JSON_ARRAY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        el_json_doc *doc = parse(cases[i].text);
        CHECK(doc != NULL);
        CHECK(el_json_type(el_json_root(doc)) == cases[i].kind);
        el_json_free(doc);
    }
    el_json_doc *doc = parse("true");
    bool b = false;
    CHECK(el_json_bool(el_json_root(doc), &b) && b);
    el_json_free(doc);
    return TEST_PASS;
}

static int test_numbers(void) {
    el_json_doc *doc = parse("[0, -0, 1, -1, 0.5, -12.5e3, 1E-2, 1e+2, 1.0, 1e-400, "
                             "9223372036854775807, -9223372036854775808, 9223372036854775808, "
                             "9007199254740993, 123456789012345678901234567890]");
    CHECK(doc != NULL);
    const el_json_value *a = el_json_root(doc);
    CHECK(el_json_len(a) == 15);
    int64_t i;
    double d;
    CHECK(el_json_int(el_json_at(a, 0), &i) && i == 0);
    CHECK(el_json_int(el_json_at(a, 1), &i) && i == 0);
    CHECK(el_json_num(el_json_at(a, 1), &d) && d == 0 && signbit(d));
    CHECK(el_json_int(el_json_at(a, 2), &i) && i == 1);
    CHECK(el_json_int(el_json_at(a, 3), &i) && i == -1);
    CHECK(!el_json_int(el_json_at(a, 4), &i) && el_json_num(el_json_at(a, 4), &d) && d == 0.5);
    CHECK(el_json_num(el_json_at(a, 5), &d) && d == -12500.0);
    CHECK(el_json_num(el_json_at(a, 6), &d) && d == 0.01);
    CHECK(!el_json_int(el_json_at(a, 7), &i) && el_json_num(el_json_at(a, 7), &d) && d == 100.0);
    CHECK(!el_json_int(el_json_at(a, 8), &i) && el_json_num(el_json_at(a, 8), &d) && d == 1.0);
    CHECK(el_json_num(el_json_at(a, 9), &d) && d == 0.0); /* underflow is not an error */
    CHECK(el_json_int(el_json_at(a, 10), &i) && i == INT64_MAX);
    CHECK(el_json_int(el_json_at(a, 11), &i) && i == INT64_MIN);
    /* 2^63 does not fit int64 but is a double */
    CHECK(!el_json_int(el_json_at(a, 12), &i));
    CHECK(el_json_num(el_json_at(a, 12), &d) && d == 9223372036854775808.0);
    /* 2^53 + 1 is exact as an integer (a double would round it to 2^53) */
    CHECK(el_json_int(el_json_at(a, 13), &i) && i == 9007199254740993LL);
    CHECK(el_json_num(el_json_at(a, 14), &d) && d == 1.2345678901234568e29);
    el_json_free(doc);
    return TEST_PASS;
}

static int test_strings(void) {
    el_json_doc *doc = parse("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", "
                             "\"\\u0041\\u00e9\\u20AC\\uD83D\\uDE00\", \"\\u0000x\", "
                             "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\", \"\", \"\\uDBFF\\uDFFF\"]");
    CHECK(doc != NULL);
    const el_json_value *a = el_json_root(doc);
    size_t len;
    const char *s = el_json_str(el_json_at(a, 0), &len);
    CHECK(len == 8 && memcmp(s, "\x22\x5c\x2f\x08\x0c\x0a\x0d\x09", 8) == 0);
    /* A = 41; U+00E9 = C3 A9; U+20AC = E2 82 AC; D83D DE00 = U+1F600 = F0 9F 98 80 */
    s = el_json_str(el_json_at(a, 1), &len);
    CHECK(len == 10 && memcmp(s, "\x41\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 10) == 0);
    s = el_json_str(el_json_at(a, 2), &len);
    CHECK(len == 2 && s[0] == 0 && s[1] == 'x' && s[2] == 0);
    s = el_json_str(el_json_at(a, 3), &len);
    CHECK(len == 9 && memcmp(s, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9) == 0);
    s = el_json_str(el_json_at(a, 4), &len);
    CHECK(len == 0 && s[0] == 0);
    /* DBFF DFFF = U+10FFFF = F4 8F BF BF */
    s = el_json_str(el_json_at(a, 5), &len);
    CHECK(len == 4 && memcmp(s, "\xF4\x8F\xBF\xBF", 4) == 0);
    el_json_free(doc);
    return TEST_PASS;
}

static int test_objects(void) {
    el_json_doc *doc = parse("{\"a\": 1, \"b\": {\"c\": [true, null, \"x\"]}, \"\\u00e9\": 3, "
                             "\"a\": 2}");
    CHECK(doc != NULL);
    const el_json_value *o = el_json_root(doc);
    CHECK(el_json_len(o) == 4);
    int64_t i;
    CHECK(el_json_int(el_json_get(o, "a"), &i) && i == 2); /* duplicate: the last one wins */
    CHECK(el_json_int(el_json_at(o, 0), &i) && i == 1);    /* file order is kept */
    size_t klen;
    CHECK(strcmp(el_json_key_at(o, 0, &klen), "a") == 0 && klen == 1);
    CHECK(strcmp(el_json_key_at(o, 2, &klen), "\xC3\xA9") == 0 && klen == 2);
    CHECK(el_json_int(el_json_get(o, "\xC3\xA9"), &i) && i == 3);
    const el_json_value *c = el_json_get(el_json_get(o, "b"), "c");
    CHECK(el_json_type(c) == EL_JSON_ARRAY && el_json_len(c) == 3);
    CHECK(el_json_type(el_json_at(c, 1)) == EL_JSON_NULL);
    CHECK(strcmp(el_json_str(el_json_at(c, 2), NULL), "x") == 0);
    /* every accessor tolerates NULL and the wrong type */
    CHECK(el_json_get(o, "zz") == NULL && el_json_get(el_json_get(o, "zz"), "a") == NULL);
    CHECK(el_json_type(NULL) == EL_JSON_NONE && el_json_len(NULL) == 0);
    CHECK(el_json_at(c, 3) == NULL && el_json_key_at(c, 0, NULL) == NULL);
    CHECK(el_json_str(el_json_get(o, "a"), NULL) == NULL && !el_json_int(c, &i));
    CHECK(strcmp(el_json_kind_name(EL_JSON_OBJECT), "object") == 0);
    el_json_free(doc);
    return TEST_PASS;
}

static int test_big_array(void) {
    size_t n = 20000;
    char *text = malloc(n * 8 + 16);
    CHECK(text != NULL);
    size_t len = 0;
    text[len++] = '[';
    for (size_t k = 0; k < n; k++) len += (size_t)sprintf(text + len, "%s[%zu]", k ? "," : "", k);
    text[len++] = ']';
    el_json_doc *doc = NULL;
    CHECK(el_json_parse(text, len, "big", &doc) == EL_OK);
    const el_json_value *a = el_json_root(doc);
    CHECK(el_json_len(a) == n);
    for (size_t k = 0; k < n; k++) {
        int64_t v;
        CHECK(el_json_len(el_json_at(a, k)) == 1);
        CHECK(el_json_int(el_json_at(el_json_at(a, k), 0), &v) && v == (int64_t)k);
    }
    el_json_free(doc);
    free(text);
    return TEST_PASS;
}

static int test_depth(void) {
    char text[2 * 70 + 1];
    for (int depth = 63; depth <= 66; depth++) {
        memset(text, '[', (size_t)depth);
        memset(text + depth, ']', (size_t)depth);
        el_json_doc *doc = NULL;
        el_status st = el_json_parse(text, 2 * (size_t)depth, "deep", &doc);
        CHECK(st == (depth <= EL_JSON_MAX_DEPTH ? EL_OK : EL_ERR_FORMAT));
        el_json_free(doc);
    }
    return TEST_PASS;
}

static int test_bom_and_unterminated_input(void) {
    el_json_doc *doc = NULL;
    CHECK(el_json_parse("\xEF\xBB\xBF[1]", 6, "bom", &doc) == EL_OK);
    el_json_free(doc);
    /* the parser must not read past len: "[12" followed by bytes that would continue it */
    CHECK(el_json_parse("[12]", 3, "cut", &doc) == EL_ERR_FORMAT && doc == NULL);
    CHECK(el_json_parse("123", 2, "cut", &doc) == EL_OK);
    int64_t i;
    CHECK(el_json_int(el_json_root(doc), &i) && i == 12);
    el_json_free(doc);
    CHECK(el_json_parse(NULL, 0, "empty", &doc) == EL_ERR_FORMAT);
    return TEST_PASS;
}

static int test_refused(void) {
    static const char *const bad[] = {
        "", "  ", "[1,]", "{\"a\":1,}", "[,1]", "{,}", "[01]", "[-01]", "[00]", "[1.]", "[.5]",
        "[1e]", "[1e+]", "[+1]", "[-]", "[- 1]", "[0x10]", "[1e400]", "[-1e400]", "[NaN]",
        "[Infinity]", "[-Infinity]", "[1] // c", "/* c */ [1]", "# c\n[1]", "['a']", "{a:1}",
        "[1 2]", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{\"a\"}", "{1:1}", "[1]]", "[1] x", "tru",
        "nul", "[True]", "[1", "{\"a\"", "{\"a\":", "\"abc", "[\"a\x01\"]", "[\"a\tb\"]",
        "[\"a\nb\"]", "[\"\\x\"]", "[\"\\'\"]", "[\"\\u12\"]", "[\"\\u12G4\"]", "[\"\\U0041\"]",
        "[\"\\uD800\"]", "[\"\\uDC00\"]", "[\"\\uD800\\u0041\"]", "[\"\\uD800x\"]",
        "[\"\\uD800\\uD800\"]", "[\"\\", "[\"\xC0\x80\"]", "[\"\xED\xA0\x80\"]",
        "[\"\xF4\x90\x80\x80\"]", "[\"\xE2\x82\"]", "[\"\x80\"]", "[\"\xFF\"]", "[\f1]",
        "[\xC2\xA0 1]", "\xEF\xBB\xBF", "[1]\xEF\xBB\xBF",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        el_json_doc *doc = NULL;
        el_status st = el_json_parse(bad[k], strlen(bad[k]), "bad.json", &doc);
        if (st != EL_ERR_FORMAT || doc != NULL) test_note("accepted: %s", bad[k]);
        CHECK(st == EL_ERR_FORMAT && doc == NULL);
        CHECK(strncmp(el_last_error(), "bad.json:", 9) == 0);
    }
    /* a NUL byte inside the given length is an error, not an end */
    el_json_doc *doc = NULL;
    CHECK(el_json_parse("[1]\0", 4, "nul", &doc) == EL_ERR_FORMAT);
    CHECK(el_json_parse("[\"a\0\"]", 6, "nul", &doc) == EL_ERR_FORMAT);
    return TEST_PASS;
}

static int test_error_position(void) {
    el_json_doc *doc = NULL;
    const char *text = "{\n  \"a\": [1,\n   2,,3]}";
    CHECK(el_json_parse(text, strlen(text), "dir/x.json", &doc) == EL_ERR_FORMAT);
    CHECK(strncmp(el_last_error(), "dir/x.json:3:6: expected a value", 32) == 0);
    CHECK(strstr(el_last_error(), "found ','") != NULL);
    CHECK(el_json_parse("[1,2", 4, "t", &doc) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "t:1:5:") && strstr(el_last_error(), "end of input"));
    CHECK(el_json_parse("{\"k\":\"\\q\"}", 10, "t", &doc) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "t:1:8: invalid escape") && strstr(el_last_error(), "'q'"));
    CHECK(el_json_parse("[\"\x01\"]", 4, "t", &doc) == EL_ERR_FORMAT);
    CHECK(strstr(el_last_error(), "t:1:3:") && strstr(el_last_error(), "byte 0x01"));
    return TEST_PASS;
}

static int test_locale_independent(void) {
    /* a program may set a locale whose decimal point is ','; numbers must still parse */
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8"))
        return test_skip("no locale with a decimal comma installed");
    el_json_doc *doc = parse("0.5");
    setlocale(LC_NUMERIC, "C");
    double d;
    CHECK(doc && el_json_num(el_json_root(doc), &d) && d == 0.5);
    el_json_free(doc);
    return TEST_PASS;
}

static int write_to_string(const char *s, size_t len, char *out, size_t cap) {
    FILE *f = tmpfile();
    if (!f || el_json_write_string(f, s, len) != EL_OK) return -1;
    long n = ftell(f);
    rewind(f);
    if (n < 0 || (size_t)n >= cap || fread(out, 1, (size_t)n, f) != (size_t)n) return -1;
    out[n] = '\0';
    fclose(f);
    return (int)n;
}

static int test_write_string(void) {
    char out[256];
    const char in[] = "a\"b\\c/\n\r\t\b\f\x01\x1f\x7f \xC3\xA9 \xF0\x9F\x98\x80 "
                      "\xFF\xC3 \xED\xA0\x80";
    CHECK(write_to_string(in, sizeof in - 1, out, sizeof out) > 0);
    const char *want = "\"a\\\"b\\\\c/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f \xC3\xA9 \xF0\x9F\x98\x80 "
                       "\\ufffd\\ufffd \\ufffd\\ufffd\\ufffd\"";
    CHECK(strcmp(out, want) == 0);
    CHECK(write_to_string("a\0b", 3, out, sizeof out) > 0 && strcmp(out, "\"a\\u0000b\"") == 0);
    /* what the writer writes, the parser reads back as the same bytes */
    const char valid[] = "x\"\\\n\x01 \xC3\xA9\xF4\x8F\xBF\xBF";
    CHECK(write_to_string(valid, sizeof valid - 1, out, sizeof out) > 0);
    el_json_doc *doc = parse(out);
    size_t len;
    const char *s = el_json_str(el_json_root(doc), &len);
    CHECK(s && len == sizeof valid - 1 && memcmp(s, valid, len) == 0);
    el_json_free(doc);
    return TEST_PASS;
}

int main(void) {
    run_test("scalars", test_scalars);
    run_test("numbers", test_numbers);
    run_test("strings", test_strings);
    run_test("objects", test_objects);
    run_test("big_array", test_big_array);
    run_test("depth", test_depth);
    run_test("bom_and_unterminated_input", test_bom_and_unterminated_input);
    run_test("refused", test_refused);
    run_test("error_position", test_error_position);
    run_test("locale_independent", test_locale_independent);
    run_test("write_string", test_write_string);
    return tests_exit_code();
}
