/* bench_mix.c - how fast this x86 core runs the instructions an exact AVX2 int8 product cannot
 * do without, with every operand in registers (no memory, no unpacking): the floor under the
 * AVX2 kernels, which `bench --rows` compares with the level's probe alone (not a test).
 *
 *   maddubs         vpmaddubsw alone, 12 independent results a loop: the multiply pipes
 *   maddubs+add     each vpmaddubsw's int16 pairs added into one of 12 accumulators by vpaddw:
 *                   the level's probe (probe_avx2.c), what every int4 kernel needs at least
 *   q4_0 group      the least a Q4_0 x Q8_0 product does per 32-element group, 8 outputs and
 *                   one activation row (256 multiply-adds, gemm.h's order): 8 vpmaddubsw, 7
 *                   vpaddw, one vpmaddwd to widen, one vpaddd for the offset term, one
 *                   vcvtdq2ps, one vmulps (weight scale x activation scale) and one vfmadd:
 *                   20 operations, 4 such groups in flight
 *   w4 chunk        the same for W4 (one scale a row): the 8 vpmaddubsw, 7 vpaddw, and one
 *                   vpmaddwd and one vpaddd into the row's int32 sum; 17 operations
 *
 * Each is printed as G multiply-adds a second (32 a vpmaddubsw) and as a fraction of the
 * probe's. A kernel with gemm.h's arithmetic (per group an exact integer sum, converted and
 * scaled in float) runs at most at its type's rate however its data is laid out; a target of
 * 1.25x the probe's floor needs 0.8 of the probe.
 * Usage: bench_mix [seconds]   (per measure, default 0.5; best of 3) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)

#include <immintrin.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 12 vpmaddubsw a loop, results discarded. */
__attribute__((target("avx2,fma"))) static void run_maddubs(long n) {
    __m256i x = _mm256_set1_epi8(1);
    __asm__ volatile("1:\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm0\n\t vpmaddubsw %[x], %[x], %%ymm1\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm2\n\t vpmaddubsw %[x], %[x], %%ymm3\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm4\n\t vpmaddubsw %[x], %[x], %%ymm5\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm6\n\t vpmaddubsw %[x], %[x], %%ymm7\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm8\n\t vpmaddubsw %[x], %[x], %%ymm9\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm10\n\t vpmaddubsw %[x], %[x], %%ymm11\n\t"
                     "dec %[n]\n\t jnz 1b"
                     : [n] "+r"(n)
                     : [x] "x"(x)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "cc");
}

/* 12 vpmaddubsw a loop, each added into its own accumulator. */
__attribute__((target("avx2,fma"))) static void run_maddubs_add(long n) {
    __m256i x = _mm256_set1_epi8(1);
    __asm__ volatile("vpxor %%ymm0, %%ymm0, %%ymm0\n\t vmovdqa %%ymm0, %%ymm1\n\t"
                     "vmovdqa %%ymm0, %%ymm2\n\t vmovdqa %%ymm0, %%ymm3\n\t"
                     "vmovdqa %%ymm0, %%ymm4\n\t vmovdqa %%ymm0, %%ymm5\n\t"
                     "vmovdqa %%ymm0, %%ymm6\n\t vmovdqa %%ymm0, %%ymm7\n\t"
                     "vmovdqa %%ymm0, %%ymm8\n\t vmovdqa %%ymm0, %%ymm9\n\t"
                     "vmovdqa %%ymm0, %%ymm10\n\t vmovdqa %%ymm0, %%ymm11\n"
                     "1:\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm0, %%ymm0\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm1, %%ymm1\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm2, %%ymm2\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm3, %%ymm3\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm4, %%ymm4\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm5, %%ymm5\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm6, %%ymm6\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm7, %%ymm7\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm8, %%ymm8\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm9, %%ymm9\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm12\n\t vpaddw %%ymm12, %%ymm10, %%ymm10\n\t"
                     "vpmaddubsw %[x], %[x], %%ymm13\n\t vpaddw %%ymm13, %%ymm11, %%ymm11\n\t"
                     "dec %[n]\n\t jnz 1b"
                     : [n] "+r"(n)
                     : [x] "x"(x)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "cc");
}

/* The assembly text of 8 vpmaddubsw summed by 7 vpaddw into s (t: each product): a 32-element
 * group of 8 outputs and one activation row in int16. Text, not a function: the loops below
 * are single asm statements. */
#define SUM8(s, t)                                                                              \
    "vpmaddubsw %[x], %[x], " s "\n\t"                                                          \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"                           \
    "vpmaddubsw %[x], %[x], " t "\n\t vpaddw " t ", " s ", " s "\n\t"

/* One Q4_0 group into float accumulator f: the int16 sum widened, the offset added, converted,
 * and multiply-added by the product of the two scales. */
#define Q4_0_GROUP(s, t, f)                                                                     \
    SUM8(s, t)                                                                                  \
    "vpmaddwd %[ones], " s ", " s "\n\t vpaddd %[comp], " s ", " s "\n\t"                       \
    "vcvtdq2ps " s ", " s "\n\t vmulps %[d], %[d], " t "\n\t vfmadd231ps " t ", " s ", " f "\n\t"

/* 4 independent Q4_0 groups a loop (32 vpmaddubsw). */
__attribute__((target("avx2,fma"))) static void run_q4_0_group(long n) {
    __m256i x = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1), comp = _mm256_set1_epi32(-8);
    __m256 d = _mm256_set1_ps(0.5f); /* stands for both scales: 16 registers are all there are */
    __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
    __m256i s0, s1, s2, s3, t0, t1, t2, t3;
    __asm__ volatile("1:\n\t" Q4_0_GROUP("%[s0]", "%[t0]", "%[f0]")
                         Q4_0_GROUP("%[s1]", "%[t1]", "%[f1]") Q4_0_GROUP("%[s2]", "%[t2]", "%[f2]")
                             Q4_0_GROUP("%[s3]", "%[t3]", "%[f3]") "dec %[n]\n\t jnz 1b"
                     : [s0] "=&x"(s0), [s1] "=&x"(s1), [s2] "=&x"(s2), [s3] "=&x"(s3),
                       [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3),
                       [f0] "+x"(f0), [f1] "+x"(f1), [f2] "+x"(f2), [f3] "+x"(f3), [n] "+r"(n)
                     : [x] "x"(x), [ones] "x"(ones), [comp] "x"(comp), [d] "x"(d)
                     : "cc");
}

/* One W4 chunk (one scale a row): the int16 sum widened into the row's int32 sum acc, scaled
 * once at the row's end. */
#define W4_CHUNK(s, t, acc)                                                                     \
    SUM8(s, t) "vpmaddwd %[ones], " s ", " s "\n\t vpaddd " s ", " acc ", " acc "\n\t"

/* 4 independent W4 chunks a loop (32 vpmaddubsw). */
__attribute__((target("avx2,fma"))) static void run_w4_chunk(long n) {
    __m256i x = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    __m256i s0, s1, s2, s3, t0, t1, t2, t3;
    __asm__ volatile("1:\n\t" W4_CHUNK("%[s0]", "%[t0]", "%[a0]")
                         W4_CHUNK("%[s1]", "%[t1]", "%[a1]") W4_CHUNK("%[s2]", "%[t2]", "%[a2]")
                             W4_CHUNK("%[s3]", "%[t3]", "%[a3]") "dec %[n]\n\t jnz 1b"
                     : [s0] "=&x"(s0), [s1] "=&x"(s1), [s2] "=&x"(s2), [s3] "=&x"(s3),
                       [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3),
                       [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [n] "+r"(n)
                     : [x] "x"(x), [ones] "x"(ones)
                     : "cc");
}

/* Best G multiply-adds a second over 3 runs of `seconds` each: run(n) does n loops of
 * per_loop vpmaddubsw. */
static double rate(void (*run)(long), int per_loop, double seconds) {
    long n = 1 << 16;
    double t0 = now();
    run(n);
    double dt = now() - t0;
    n = (long)(n * seconds / (dt > 1e-6 ? dt : 1e-6)) + 1;
    double best = 0.0;
    for (int k = 0; k < 3; k++) {
        t0 = now();
        run(n);
        double g = (double)n * per_loop * 32.0 / (now() - t0) * 1e-9;
        if (g > best) best = g;
    }
    return best;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    if (!(seconds > 0.0) || seconds > 60.0) {
        fprintf(stderr, "bench_mix: seconds must be above 0 and at most 60\n");
        return 1;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "bench_mix: this CPU has no AVX2 and FMA\n");
        return 1;
    }
    double alone = rate(run_maddubs, 12, seconds);
    double probe = rate(run_maddubs_add, 12, seconds);
    double q4_0 = rate(run_q4_0_group, 32, seconds);
    double w4 = rate(run_w4_chunk, 32, seconds);
    printf("one core, operands in registers, G multiply-adds a second (fraction of the probe)\n");
    printf("maddubs        %7.1f  (%.2f)\n", alone, alone / probe);
    printf("maddubs+add    %7.1f  (1.00)  the level's probe\n", probe);
    printf("q4_0 group     %7.1f  (%.2f)  20 operations per 256 multiply-adds\n", q4_0,
           q4_0 / probe);
    printf("w4 chunk       %7.1f  (%.2f)  17 operations per 256 multiply-adds\n", w4, w4 / probe);
    return 0;
}

#else

int main(void) {
    fprintf(stderr, "bench_mix: x86-64 only (the AVX2 kernels' instructions)\n");
    return 1;
}

#endif
