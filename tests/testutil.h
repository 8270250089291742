/* testutil.h - the small harness every test program uses.
 *
 * A test is `static int test_x(void)` returning TEST_PASS, TEST_FAIL or TEST_SKIP; main() calls
 * run_test("x", test_x) for each and returns tests_exit_code(). Each result is printed as one line
 * "PASS name", "FAIL name" or "SKIP name: why", which tests/run.sh counts. A failing test exits
 * the program non-zero. */
#ifndef EL_TESTUTIL_H
#define EL_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelora.h"

enum { TEST_PASS = 0, TEST_FAIL = 1, TEST_SKIP = 2 };

void run_test(const char *name, int (*fn)(void));
int tests_exit_code(void);

/* Prints where and what failed. CHECK is a macro only to capture the expression and line. */
void test_failed(const char *file, int line, const char *what);
#define CHECK(cond)                                     \
    do {                                                \
        if (!(cond)) {                                  \
            test_failed(__FILE__, __LINE__, #cond);     \
            return TEST_FAIL;                           \
        }                                               \
    } while (0)

/* Prints a reason for the SKIP line and returns TEST_SKIP. */
int test_skip(const char *why);
/* Prints extra detail under the current test (e.g. the values that differed). */
void test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Path of a file under ../shared/data (or $EL_DATA_DIR), or NULL if it is absent.
 * The returned string is static storage, valid until the next call. */
const char *test_data_path(const char *relative);
/* The whole file as a malloc'd buffer with a NUL after its size bytes, or NULL if it cannot be
 * read (or path is NULL). */
char *test_read_file(const char *path, size_t *size);

/* llama.cpp's tokenizer test vectors (tests/test-tokenizer-0): tokenizers/NAME.inp holds the
 * texts, each followed by "\n__ggml_vocab_test__\n"; NAME.out one line of ids per text. */
typedef struct test_vectors {
    char *inp, *out;
    size_t n_inp;
    char *cur, *line;
    int32_t ids[1024]; /* the expected ids of the current case */
    size_t n_ids;
} test_vectors;

/* Opens the vectors of tokenizers/NAME (e.g. "ggml-vocab-gpt-2.gguf"); false if absent. */
bool test_vectors_open(const char *name, test_vectors *tv);
/* Moves to the next case: its text (not NUL-terminated) and expected ids in tv->ids. Returns
 * false at the end, or if the files disagree (then tv->cur is not NULL). */
bool test_vectors_next(test_vectors *tv, const char **text, size_t *len);
void test_vectors_close(test_vectors *tv);

/* stories260K (models/stories260K.bin with tok512.bin) loaded, or NULL if the files are absent
 * (or do not load: the message is printed). */
el_model *test_load_stories(void);

/* A fresh temporary directory for this test program (removed at exit). */
const char *test_tmp_dir(void);
/* test_tmp_dir()/name, in one of 8 static buffers used in turn (so a few can be held at once). */
const char *test_tmp_path(const char *name);

/* Deterministic pseudo-random numbers for test data. */
typedef struct { uint64_t s; } test_rng;
uint32_t test_rand_u32(test_rng *r);
float test_rand_uniform(test_rng *r, float lo, float hi);

/* max |a-b| / max(1, max|b|) over n */
double test_max_rel_err(const float *a, const float *b, size_t n);

#endif
