/* fault_decode.c - linked with -Wl,--wrap=el_decode into build/tests/edgelora-decode-fault, a
 * copy of the program for the tests alone: el_decode fails, changing nothing, for any batch with
 * a row at position EL_TEST_DECODE_FAIL_POS.
 *
 * It reaches what nothing real does: `batch` sizes the KV cache so that no request can overflow
 * it and never builds an invalid batch, so a request's own el_decode failure (a decode that
 * fails for one request mid-generation, decode_each in cli/batch.c) has no other cause. The
 * failure is the library's own kind for such a case, EL_ERR_CONTEXT_FULL, with a message. */
#include <stdlib.h>

#include "core/error.h"

el_status __real_el_decode(el_context *ctx, const el_batch *b);
el_status __wrap_el_decode(el_context *ctx, const el_batch *b);

el_status __wrap_el_decode(el_context *ctx, const el_batch *b) {
    const char *at = getenv("EL_TEST_DECODE_FAIL_POS");
    if (at && b && b->pos) {
        long pos = atol(at);
        for (int32_t i = 0; i < b->n_rows; i++)
            if (b->pos[i] == pos)
                return el_error(EL_ERR_CONTEXT_FULL, "el_decode: test fault: row %d at position %ld",
                                i, pos);
    }
    return __real_el_decode(ctx, b);
}
