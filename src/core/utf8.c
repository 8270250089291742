/* utf8.c - see utf8.h. */
#include "core/utf8.h"

size_t el_utf8_seq_len(unsigned char first) {
    if (first < 0xC0) {
        return 1;
    }
    return first < 0xE0 ? 2 : first < 0xF0 ? 3 : 4;
}

size_t el_utf8_decode(const char *s, size_t len, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    size_t n;
    uint32_t c, min;
    if (u[0] >= 0xC2 && u[0] <= 0xDF) {
        n = 2, c = u[0] & 0x1Fu, min = 0x80;
    } else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
        n = 3, c = u[0] & 0x0Fu, min = 0x800;
    } else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
        n = 4, c = u[0] & 0x07u, min = 0x10000;
    } else {
        *cp = EL_UNICODE_REPLACEMENT; /* continuation byte, C0/C1 (always overlong), F5..FF */
        return 1;
    }
    if (n > len) {
        *cp = EL_UNICODE_REPLACEMENT;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = EL_UNICODE_REPLACEMENT;
            return 1;
        }
        c = c << 6 | (u[i] & 0x3Fu);
    }
    if (c < min || c > EL_UNICODE_MAX || (c >= 0xD800 && c <= 0xDFFF)) {
        *cp = EL_UNICODE_REPLACEMENT;
        return 1;
    }
    *cp = c;
    return n;
}

size_t el_utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
        return 0;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > EL_UNICODE_MAX) {
        return 0;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t el_utf8_valid_len(const char *s, size_t len) {
    uint32_t cp;
    size_t n = el_utf8_decode(s, len, &cp);
    return n == 1 && (unsigned char)s[0] >= 0x80 ? 0 : n;
}
