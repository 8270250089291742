/* json.c - strict JSON parsing into a tree held in one allocation, and JSON string writing.
 *
 * Layout: before parsing, a scan counts the places a value can start ('[', '{', ',' outside
 * strings, plus the root), which bounds the number of values. One block then holds that many
 * value slots and len+1 bytes for unescaped strings (unescaping never lengthens a string, and
 * each string's NUL takes the place of its quotes). While a container is being parsed, its
 * finished children wait on a stack that grows down from the top of the slots; when it closes,
 * they move to the bottom, where finished values stay. Every value is in one of the two regions,
 * so they never meet, nothing is reallocated, and pointers into the tree never move. */
#include "formats/json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"

struct el_json_value {
    const char *key; /* member name when the value is inside an object */
    union {
        const char *str;            /* EL_JSON_STRING: NUL-terminated */
        const el_json_value *items; /* EL_JSON_ARRAY/OBJECT: len contiguous children */
        double num;                 /* EL_JSON_NUMBER */
    } u;
    int64_t i; /* the exact integer if is_int; 0/1 for a bool */
    uint32_t key_len;
    uint32_t len; /* string bytes or number of children */
    uint8_t type;
    bool is_int;
};

struct el_json_doc {
    el_json_value *root;
    /* slots and strings follow in the same allocation */
};

typedef struct parser {
    const char *s;
    size_t n, pos;
    const char *name;
    size_t first_line; /* the number of the text's first line in its file */
    el_json_value *slots;
    size_t n_slots;
    size_t done; /* finished values: slots[0..done) */
    size_t top;  /* children of open containers: slots[top..n_slots) */
    char *strs;
    size_t str_used;
    int depth;
} parser;


/* ---------------------------------------------------------------- errors */

/* "name:line:col: what (found X)", line and column of byte offset at. */
static el_status fail(const parser *p, size_t at, const char *what) {
    size_t line = p->first_line, line_start = 0;
    for (size_t i = 0; i < at && i < p->n; i++)
        if (p->s[i] == '\n') line++, line_start = i + 1;
    char found[24];
    if (at >= p->n) snprintf(found, sizeof found, "end of input");
    else if (p->s[at] >= 0x20 && p->s[at] < 0x7F) snprintf(found, sizeof found, "'%c'", p->s[at]);
    else snprintf(found, sizeof found, "byte 0x%02x", (unsigned)(uint8_t)p->s[at]);
    return el_error(EL_ERR_FORMAT, "%s:%zu:%zu: %s (found %s)", p->name, line, at - line_start + 1,
                    what, found);
}

/* ---------------------------------------------------------------- lexing */

static void skip_ws(parser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static int peek(const parser *p) { return p->pos < p->n ? (uint8_t)p->s[p->pos] : -1; }

/* Upper bound on the number of values: each one is the root, the first element of a container
 * or follows a comma. Strings are skipped the way the parser reads them, so that commas inside
 * them do not count. */
static size_t count_value_starts(const char *s, size_t n) {
    size_t count = 1;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{' || c == ',') {
            count++;
        }
    }
    return count;
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits of a \u escape whose 'u' is at p->pos - 1. */
static el_status read_hex4(parser *p, uint32_t *cp) {
    *cp = 0;
    for (int k = 0; k < 4; k++) {
        int d = hex_digit(peek(p));
        if (d < 0) return fail(p, p->pos, "expected 4 hex digits after \\u");
        *cp = *cp << 4 | (uint32_t)d;
        p->pos++;
    }
    return EL_OK;
}

/* Decodes the escape after a backslash at p->pos - 1, writing UTF-8 to dst. */
static el_status read_escape(parser *p, char *dst, size_t *dst_len) {
    size_t at = p->pos - 1;
    int c = peek(p);
    p->pos++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *e = c > 0 ? strchr(from, c) : NULL;
    if (e) {
        dst[0] = to[e - from];
        *dst_len = 1;
        return EL_OK;
    }
    if (c != 'u') return fail(p, at + 1, "invalid escape (expected one of \"\\/bfnrtu after \\)");
    uint32_t cp;
    el_status st = read_hex4(p, &cp);
    if (st != EL_OK) return st;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, at, "lone low surrogate escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->pos + 1 >= p->n || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail(p, at, "lone high surrogate escape (expected a \\uDC00-\\uDFFF to follow)");
        p->pos += 2;
        uint32_t lo;
        if ((st = read_hex4(p, &lo)) != EL_OK) return st;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return fail(p, at, "lone high surrogate escape (expected a \\uDC00-\\uDFFF to follow)");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *dst_len = el_utf8_encode(cp, dst);
    return EL_OK;
}

/* Reads the string whose opening quote is at p->pos into the string area. */
static el_status read_string(parser *p, const char **out, uint32_t *out_len) {
    p->pos++;
    char *dst = p->strs + p->str_used;
    size_t len = 0;
    for (;;) {
        if (p->pos >= p->n) return fail(p, p->pos, "unterminated string");
        uint8_t c = (uint8_t)p->s[p->pos];
        if (c == '"') break;
        if (c < 0x20) return fail(p, p->pos, "control character in a string (must be escaped)");
        if (c == '\\') {
            p->pos++;
            size_t k = 0;
            el_status st = read_escape(p, dst + len, &k);
            if (st != EL_OK) return st;
            len += k;
            continue;
        }
        size_t k = el_utf8_valid_len(p->s + p->pos, p->n - p->pos);
        if (k == 0) return fail(p, p->pos, "invalid UTF-8 in a string");
        memcpy(dst + len, p->s + p->pos, k);
        len += k;
        p->pos += k;
    }
    p->pos++;
    dst[len] = '\0';
    p->str_used += len + 1;
    *out = dst;
    *out_len = (uint32_t)len;
    return EL_OK;
}

/* strtod in the "C" locale, whatever locale the program has set. */
static locale_t c_locale;
static void make_c_locale(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static double strtod_c(const char *s) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_c_locale);
    return c_locale ? strtod_l(s, NULL, c_locale) : strtod(s, NULL);
}

static el_status read_number(parser *p, el_json_value *v) {
    size_t start = p->pos;
    bool neg = peek(p) == '-';
    if (neg) p->pos++;
    /* the integer part: 0 or [1-9][0-9]*, kept exactly while it fits int64 */
    if (peek(p) < '0' || peek(p) > '9') return fail(p, p->pos, "expected a digit");
    uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool fits = true;
    if (peek(p) == '0') {
        p->pos++;
        if (peek(p) >= '0' && peek(p) <= '9') return fail(p, p->pos, "leading zero in a number");
    } else {
        while (peek(p) >= '0' && peek(p) <= '9') {
            uint64_t d = (uint64_t)(peek(p) - '0');
            if (mag > (limit - d) / 10) fits = false;
            else mag = mag * 10 + d;
            p->pos++;
        }
    }
    bool integral = true;
    if (peek(p) == '.') {
        integral = false;
        p->pos++;
        if (peek(p) < '0' || peek(p) > '9') return fail(p, p->pos, "expected a digit after '.'");
        while (peek(p) >= '0' && peek(p) <= '9') p->pos++;
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        integral = false;
        p->pos++;
        if (peek(p) == '+' || peek(p) == '-') p->pos++;
        if (peek(p) < '0' || peek(p) > '9')
            return fail(p, p->pos, "expected a digit in the exponent");
        while (peek(p) >= '0' && peek(p) <= '9') p->pos++;
    }
    /* strtod needs a terminated copy; the unused string area has room (see the top comment) */
    size_t n = p->pos - start;
    char *tmp = p->strs + p->str_used;
    memcpy(tmp, p->s + start, n);
    tmp[n] = '\0';
    double d = strtod_c(tmp);
    if (isinf(d)) return fail(p, start, "number too large for a double");
    v->type = EL_JSON_NUMBER;
    v->u.num = d;
    v->is_int = integral && fits;
    if (v->is_int) v->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return EL_OK;
}

/* ---------------------------------------------------------------- values */

static el_status parse_value(parser *p, el_json_value *v);

static el_status push(parser *p, const el_json_value *v) {
    if (p->top <= p->done) return fail(p, p->pos, "internal error: value count bound exceeded");
    p->slots[--p->top] = *v;
    return EL_OK;
}

/* Moves the children stacked since mark (in reverse order) to the finished region. */
static void close_container(parser *p, el_json_value *v, size_t mark) {
    size_t count = mark - p->top;
    el_json_value *c = p->slots + p->top;
    for (size_t i = 0; i < count / 2; i++) {
        el_json_value t = c[i];
        c[i] = c[count - 1 - i];
        c[count - 1 - i] = t;
    }
    memmove(p->slots + p->done, c, count * sizeof *c);
    v->u.items = p->slots + p->done;
    v->len = (uint32_t)count;
    p->done += count;
    p->top = mark;
    p->depth--;
}

static el_status parse_array(parser *p, el_json_value *v) {
    if (++p->depth > EL_JSON_MAX_DEPTH) return fail(p, p->pos, "nesting deeper than 64 levels");
    v->type = EL_JSON_ARRAY;
    p->pos++;
    size_t mark = p->top;
    skip_ws(p);
    if (peek(p) == ']') {
        p->pos++;
        close_container(p, v, mark);
        return EL_OK;
    }
    for (;;) {
        el_json_value child = {0};
        el_status st = parse_value(p, &child);
        if (st == EL_OK) st = push(p, &child);
        if (st != EL_OK) return st;
        skip_ws(p);
        int c = peek(p);
        p->pos++;
        if (c == ']') break;
        if (c != ',') return fail(p, p->pos - 1, "expected ',' or ']' after an array element");
    }
    close_container(p, v, mark);
    return EL_OK;
}

static el_status parse_object(parser *p, el_json_value *v) {
    if (++p->depth > EL_JSON_MAX_DEPTH) return fail(p, p->pos, "nesting deeper than 64 levels");
    v->type = EL_JSON_OBJECT;
    p->pos++;
    size_t mark = p->top;
    skip_ws(p);
    if (peek(p) == '}') {
        p->pos++;
        close_container(p, v, mark);
        return EL_OK;
    }
    for (;;) {
        skip_ws(p);
        if (peek(p) != '"') return fail(p, p->pos, "expected a string key");
        el_json_value child = {0};
        el_status st = read_string(p, &child.key, &child.key_len);
        if (st != EL_OK) return st;
        skip_ws(p);
        if (peek(p) != ':') return fail(p, p->pos, "expected ':' after an object key");
        p->pos++;
        if ((st = parse_value(p, &child)) != EL_OK || (st = push(p, &child)) != EL_OK) return st;
        skip_ws(p);
        int c = peek(p);
        p->pos++;
        if (c == '}') break;
        if (c != ',') return fail(p, p->pos - 1, "expected ',' or '}' after an object member");
    }
    close_container(p, v, mark);
    return EL_OK;
}

static el_status parse_literal(parser *p, const char *word) {
    size_t k = strlen(word);
    if (p->n - p->pos < k || memcmp(p->s + p->pos, word, k) != 0)
        return fail(p, p->pos, "expected a value");
    p->pos += k;
    return EL_OK;
}

static el_status parse_value(parser *p, el_json_value *v) {
    skip_ws(p);
    switch (peek(p)) {
    case '{': return parse_object(p, v);
    case '[': return parse_array(p, v);
    case '"': v->type = EL_JSON_STRING; return read_string(p, &v->u.str, &v->len);
    case 't': v->type = EL_JSON_BOOL; v->i = 1; return parse_literal(p, "true");
    case 'f': v->type = EL_JSON_BOOL; v->i = 0; return parse_literal(p, "false");
    case 'n': v->type = EL_JSON_NULL; return parse_literal(p, "null");
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9': return read_number(p, v);
    default: return fail(p, p->pos, "expected a value");
    }
}

el_status el_json_parse(const char *text, size_t len, const char *name, el_json_doc **out) {
    return el_json_parse_line(text, len, name, 1, out);
}

el_status el_json_parse_line(const char *text, size_t len, const char *name, size_t line_no,
                             el_json_doc **out) {
    *out = NULL;
    if (!name) name = "<json>";
    if (len >= UINT32_MAX)
        return el_error(EL_ERR_UNSUPPORTED, "%s: JSON text of %zu bytes is too large", name, len);
    if (!text) len = 0;
    parser p = {.s = text, .n = len, .name = name, .first_line = line_no};
    p.n_slots = count_value_starts(text, len);
    size_t slot_bytes = p.n_slots * sizeof(el_json_value);
    el_json_doc *doc = malloc(sizeof *doc + slot_bytes + len + 1);
    if (!doc) return el_error(EL_ERR_NOMEM, "%s: out of memory for %zu bytes of JSON", name, len);
    p.slots = (el_json_value *)(doc + 1);
    p.top = p.n_slots;
    p.strs = (char *)p.slots + slot_bytes;

    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
    el_json_value root = {0};
    el_status st = parse_value(&p, &root);
    if (st == EL_OK) {
        skip_ws(&p);
        if (p.pos < p.n) st = fail(&p, p.pos, "expected the end of input after the root value");
    }
    if (st == EL_OK) st = push(&p, &root); /* cannot fail: the root has its own slot */
    if (st != EL_OK) {
        free(doc);
        return st;
    }
    doc->root = p.slots + p.top;
    *out = doc;
    return EL_OK;
}

void el_json_free(el_json_doc *doc) { free(doc); }

const el_json_value *el_json_root(const el_json_doc *doc) { return doc ? doc->root : NULL; }

/* ---------------------------------------------------------------- access */

el_json_kind el_json_type(const el_json_value *v) {
    return v ? (el_json_kind)v->type : EL_JSON_NONE;
}

const char *el_json_kind_name(el_json_kind t) {
    static const char *const names[] = {"nothing", "null", "bool", "number", "string", "array",
                                        "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const el_json_value *el_json_get(const el_json_value *obj, const char *key) {
    if (!obj || obj->type != EL_JSON_OBJECT) return NULL;
    size_t k = strlen(key);
    for (size_t i = obj->len; i-- > 0;) {
        const el_json_value *m = &obj->u.items[i];
        if (m->key_len == k && memcmp(m->key, key, k) == 0) return m;
    }
    return NULL;
}

size_t el_json_len(const el_json_value *v) {
    return v && (v->type == EL_JSON_ARRAY || v->type == EL_JSON_OBJECT) ? v->len : 0;
}

const el_json_value *el_json_at(const el_json_value *v, size_t i) {
    return i < el_json_len(v) ? &v->u.items[i] : NULL;
}

const char *el_json_key_at(const el_json_value *obj, size_t i, size_t *len) {
    if (!obj || obj->type != EL_JSON_OBJECT || i >= obj->len) return NULL;
    if (len) *len = obj->u.items[i].key_len;
    return obj->u.items[i].key;
}

const char *el_json_str(const el_json_value *v, size_t *len) {
    if (!v || v->type != EL_JSON_STRING) return NULL;
    if (len) *len = v->len;
    return v->u.str;
}

bool el_json_int(const el_json_value *v, int64_t *out) {
    if (!v || v->type != EL_JSON_NUMBER || !v->is_int) return false;
    *out = v->i;
    return true;
}

bool el_json_num(const el_json_value *v, double *out) {
    if (!v || v->type != EL_JSON_NUMBER) return false;
    *out = v->u.num;
    return true;
}

bool el_json_bool(const el_json_value *v, bool *out) {
    if (!v || v->type != EL_JSON_BOOL) return false;
    *out = v->i != 0;
    return true;
}

/* ---------------------------------------------------------------- writing */

bool el_json_valid_utf8(const char *s, size_t len) {
    for (size_t i = 0, k; i < len; i += k)
        if ((k = el_utf8_valid_len(s + i, len - i)) == 0) return false;
    return true;
}

el_status el_json_write_string(FILE *f, const char *s, size_t len) {
    const uint8_t *u = (const uint8_t *)s;
    putc('"', f);
    for (size_t i = 0; i < len;) {
        uint8_t c = u[i];
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        }
        if (esc) {
            fputs(esc, f);
            i++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t k = el_utf8_valid_len(s + i, len - i);
            if (k == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(u + i, 1, k, f);
                i += k;
            }
        }
    }
    putc('"', f);
    return ferror(f) ? el_error(EL_ERR_IO, "writing a JSON string failed") : EL_OK;
}
