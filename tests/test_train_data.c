/* test_train_data.c - the training data loader: uint16/uint32 token shards read as the bytes say,
 * out-of-range ids refused, every window visited exactly once per epoch in a seeded order that a
 * seek reproduces, JSONL examples masked to the response, and the AdamW schedule's endpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "train/data.h"
#include "train/optim.h"
#include "train/svg.h"

static const char *tmp_file(const char *name, const void *data, size_t n) {
    static char path[4][1024];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 1024, "%s/%s", test_tmp_dir(), name);
    FILE *f = fopen(p, "wb");
    if (!f)
        return NULL;
    fwrite(data, 1, n, f);
    fclose(f);
    return p;
}

static int test_shards(void) {
    /* 0..40 as little-endian uint16 and 41..60 as uint32, written byte by byte */
    uint8_t b16[82], b32[80];
    for (int i = 0; i <= 40; i++)
        b16[2 * i] = (uint8_t)i, b16[2 * i + 1] = 0;
    for (int i = 0; i < 20; i++)
        b32[4 * i] = (uint8_t)(41 + i), b32[4 * i + 1] = b32[4 * i + 2] = b32[4 * i + 3] = 0;
    const char *files[2] = {tmp_file("a.u16", b16, sizeof b16), tmp_file("b.u32", b32, sizeof b32)};
    el_tdata d = {0};
    CHECK(el_tdata_load_stream(&d, files, 2, NULL, 100) == EL_OK);
    CHECK(d.n == 61);
    for (int i = 0; i < 61; i++)
        CHECK(d.ids[i] == i);
    el_tdata_free(&d);
    CHECK(el_tdata_load_stream(&d, files, 2, NULL, 50) == EL_ERR_FORMAT); /* id 50.. too big */
    el_tdata_free(&d);
    const char *odd[1] = {tmp_file("odd.u16", b16, 3)};
    CHECK(el_tdata_load_stream(&d, odd, 1, NULL, 100) == EL_ERR_FORMAT);
    el_tdata_free(&d);
    return TEST_PASS;
}

static int test_loader_epochs(void) {
    el_tdata d = {0};
    d.n = 61;
    d.ids = malloc(61 * sizeof *d.ids);
    for (int i = 0; i < 61; i++)
        d.ids[i] = i;
    el_loader l;
    CHECK(el_loader_init(&l, &d, 6, 42, true, "test") == EL_OK);
    CHECK(l.n_items == 10); /* windows of 6 + 1 at multiples of 6 */
    int32_t tok[6 * 10], tgt[6 * 10];
    float mask[6 * 10];
    int seen[10] = {0};
    el_loader_next(&l, 10, tok, tgt, mask);
    for (int b = 0; b < 10; b++) {
        int start = tok[b * 6];
        CHECK(start % 6 == 0 && start / 6 < 10);
        seen[start / 6]++;
        for (int j = 0; j < 6; j++)
            CHECK(tok[b * 6 + j] == start + j && tgt[b * 6 + j] == start + j + 1 &&
                  mask[b * 6 + j] == 1.0f);
    }
    for (int i = 0; i < 10; i++)
        CHECK(seen[i] == 1);
    /* epoch 1 is another order; a loader sought to (1, 3) continues exactly as this one */
    int32_t e1[6 * 10], again[6 * 7], tg[6 * 10];
    el_loader_next(&l, 10, e1, tg, mask);
    CHECK(memcmp(e1, tok, sizeof tok) != 0);
    el_loader m;
    CHECK(el_loader_init(&m, &d, 6, 42, true, "test") == EL_OK);
    el_loader_seek(&m, 1, 3);
    el_loader_next(&m, 7, again, tg, mask);
    CHECK(!memcmp(again, e1 + 3 * 6, sizeof again));
    el_loader_free(&l);
    el_loader_free(&m);
    el_tdata_free(&d);
    return TEST_PASS;
}

static int test_schedule(void) {
    /* warmup 10 to lr 1, cosine to 0.1 at step 110: hand-computed points */
    CHECK(fabsf(el_lr_schedule(0, 110, 10, 1.0f, 0.1f) - 0.1f) < 1e-6f);
    CHECK(fabsf(el_lr_schedule(9, 110, 10, 1.0f, 0.1f) - 1.0f) < 1e-6f);
    CHECK(fabsf(el_lr_schedule(10, 110, 10, 1.0f, 0.1f) - 1.0f) < 1e-6f);
    CHECK(fabsf(el_lr_schedule(60, 110, 10, 1.0f, 0.1f) - 0.55f) < 1e-6f); /* half way */
    CHECK(fabsf(el_lr_schedule(110, 110, 10, 1.0f, 0.1f) - 0.1f) < 1e-6f);
    float g[2] = {3.0f, 4.0f}; /* norm 5, clipped to 1 */
    CHECK(fabsf(el_clip_grad_norm(g, 2, 1.0f) - 5.0f) < 1e-6f);
    CHECK(fabsf(g[0] - 0.6f) < 1e-5f && fabsf(g[1] - 0.8f) < 1e-5f);
    return TEST_PASS;
}

/* ticks: 1, 2 or 5 times a power of ten, about `target` of them (hand-computed) */
static int test_plot(void) {
    CHECK(el_svg_tick_step(0, 100, 8) == 10.0);  /* raw 12.5 -> 10 */
    CHECK(fabs(el_svg_tick_step(0, 1, 6) - 0.2) < 1e-12);   /* raw 0.167 -> 0.2 */
    CHECK(fabs(el_svg_tick_step(2, 6, 6) - 0.5) < 1e-12);   /* raw 0.667 -> 0.5 */
    float x[3] = {1, 2, 3}, y[3] = {5, 4, 3.5f};
    el_series s = {"train", "blue", x, y, 3};
    char path[1024];
    snprintf(path, sizeof path, "%s/p.svg", test_tmp_dir());
    CHECK(el_svg_plot(path, "a <title> & more", "step", "loss", &s, 1) == EL_OK);
    FILE *f = fopen(path, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    CHECK(strstr(buf, "<svg") == buf && strstr(buf, "</svg>") && strstr(buf, "<polyline"));
    CHECK(strstr(buf, "a &lt;title&gt; &amp; more"));
    return TEST_PASS;
}

int main(void) {
    run_test("svg_plot", test_plot);
    run_test("token_shards", test_shards);
    run_test("loader_epochs_and_seek", test_loader_epochs);
    run_test("schedule_and_clipping", test_schedule);
    return tests_exit_code();
}
