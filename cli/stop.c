/* stop.c - stop strings (--stop, a batch request's "stop"): generation ends where the text first
 * contains one, and the text up to it is the output. While generating, the tail of the text
 * that could still become a stop string is held back, so nothing past a stop is ever shown. */
#include <string.h>

#include "cli.h"

size_t cli_stop_scan(const char *s, size_t n, const char *const *stops, int n_stops, bool *found) {
    size_t first = n;
    *found = false;
    for (int i = 0; i < n_stops; i++) {
        size_t k = strlen(stops[i]);
        for (size_t at = 0; k > 0 && at + k <= n && at < first; at++)
            if (memcmp(s + at, stops[i], k) == 0) {
                first = at, *found = true;
                break;
            }
    }
    if (*found) return first;
    size_t keep = 0; /* the longest tail of s that begins some stop string */
    for (int i = 0; i < n_stops; i++) {
        size_t k = strlen(stops[i]);
        if (k == 0) continue;
        for (size_t t = k > n ? n : k - 1; t > keep; t--)
            if (memcmp(s + n - t, stops[i], t) == 0) {
                keep = t;
                break;
            }
    }
    return n - keep;
}

size_t cli_stream_update(cli_stream *s, const char *text, size_t n, const char *const *stops,
                         int n_stops, bool final) {
    bool found;
    size_t at = cli_stop_scan(text, n, stops, n_stops, &found);
    size_t upto = found || !final ? at : n;
    s->stopped = found;
    return upto > s->shown ? upto : s->shown;
}
