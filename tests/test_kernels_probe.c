/* test_kernels_probe.c - the int8 peak probes of the ISA levels (dispatch.h), which `bench
 * --rows` divides a step's multiply-adds by: each must do the multiply-adds it claims. */
#include "kernels/dispatch.h"
#include "testutil.h"

/* Every probe of a level this CPU runs (also under qemu) did the multiply-adds it claims: with
 * bytes of 1 each adds one, with bytes of 2 four, so the checksums are the counts; run for 0
 * iterations it does nothing. The reference kernels have none. */
static int test_probe_checksums(void) {
    el_kernels k;
    el_kernels_reference(&k);
    CHECK(k.int8_probe.run == NULL);
    int probed = 0;
    for (size_t i = 0; el_kernels_level_name(i); i++) {
        if (!el_kernels_level(el_kernels_level_name(i), &k)) continue;
        const el_int8_probe *p = &k.int8_probe;
        CHECK(p->run != NULL && p->instruction != NULL);
        CHECK(p->macs_per_iter % (EL_PROBE_CHAINS * p->macs_per_instr) == 0);
        const int64_t iters[] = {0, 1, 7, 1000, 100003};
        for (size_t j = 0; j < sizeof iters / sizeof iters[0]; j++) {
            uint64_t count = (uint64_t)iters[j] * (uint64_t)p->macs_per_iter;
            uint32_t got1 = p->run(iters[j], 1), got2 = p->run(iters[j], 2);
            if (got1 != (uint32_t)count || got2 != (uint32_t)(4 * count))
                test_note("%s: %lld iterations gave %u and %u, want %llu and %llu", k.isa,
                          (long long)iters[j], got1, got2, (unsigned long long)count,
                          (unsigned long long)(4 * count));
            CHECK(got1 == (uint32_t)count && got2 == (uint32_t)(4 * count));
        }
        probed++;
    }
    test_note("%d levels probed", probed);
    return TEST_PASS;
}

int main(void) {
    run_test("probe_checksums", test_probe_checksums);
    return tests_exit_code();
}
