/* test_outfile.c - files that appear whole or not at all (core/outfile.h, and the tools'
 * el_output on it): the unnamed way and the named fallback (used where the filesystem has no
 * O_TMPFILE), commit and discard, an existing target kept until commit, a killed writer's
 * temporary removed by the next writer, and the public handle. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/outfile.h"
#include "testutil.h"

static char dir[64];

/* The names in dir, sorted, space-separated, into buf. */
static const char *listing(char *buf, size_t cap) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            strncat(buf, names[i]->d_name, cap - strlen(buf) - 2);
            strncat(buf, " ", cap - strlen(buf) - 1);
        }
        free(names[i]);
    }
    if (n >= 0) free(names);
    return buf;
}

static bool file_is(const char *path, const char *want) {
    char got[64] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return want == NULL;
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    return want && n == strlen(want) && memcmp(got, want, n) == 0;
}

static void clear_dir(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f %s/*", dir);
    if (system(cmd) != 0) test_note("could not clear %s", dir);
}

/* Both ways: nothing visible under the target until commit, which replaces an existing one;
 * discard leaves the old one and nothing else. */
static int check_way(el_status (*open_fn)(el_outfile *, const char *), bool named) {
    char path[96], buf[256];
    clear_dir();
    snprintf(path, sizeof path, "%s/out.bin", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && fputs("old", f) >= 0 && fclose(f) == 0);
    el_outfile o;
    CHECK(open_fn(&o, path) == EL_OK);
    if (named) CHECK(!o.unnamed); /* (the unnamed way falls back where there is no O_TMPFILE) */
    fputs("new data", o.f);
    CHECK(file_is(path, "old"));
    listing(buf, sizeof buf);
    if (o.unnamed) CHECK(strcmp(buf, "out.bin ") == 0);
    else CHECK(strstr(buf, "out.bin.tmp-") != NULL); /* the named way shows its temporary */
    CHECK(el_outfile_commit(&o) == EL_OK);
    CHECK(file_is(path, "new data"));
    CHECK(strcmp(listing(buf, sizeof buf), "out.bin ") == 0);
    CHECK(open_fn(&o, path) == EL_OK);
    fputs("dropped", o.f);
    el_outfile_discard(&o);
    CHECK(file_is(path, "new data"));
    if (strcmp(listing(buf, sizeof buf), "out.bin ") != 0) test_note("left: %s", buf);
    CHECK(strcmp(buf, "out.bin ") == 0);
    return TEST_PASS;
}

static int test_unnamed(void) { return check_way(el_outfile_open, false); }
static int test_named(void) { return check_way(el_outfile_open_named, true); }

/* A writer killed after writing under its temporary name (the named way) leaves that name; the
 * next writer of the same target removes it, and keeps those of live processes. */
static int test_killed_named_writer(void) {
    char path[96], buf[256], live[128];
    clear_dir();
    snprintf(path, sizeof path, "%s/x.gguf", dir);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        el_outfile o;
        if (el_outfile_open_named(&o, path) != EL_OK) _exit(1);
        fputs("partial", o.f);
        fflush(o.f);
        _exit(0); /* as if killed: no commit, no discard */
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strstr(listing(buf, sizeof buf), "x.gguf.tmp-") != NULL);
    snprintf(live, sizeof live, "%s/x.gguf.tmp-%ld-99", dir, (long)getppid());
    FILE *f = fopen(live, "wb");
    CHECK(f && fclose(f) == 0);
    el_outfile o;
    CHECK(el_outfile_open(&o, path) == EL_OK);
    fputs("whole", o.f);
    CHECK(el_outfile_commit(&o) == EL_OK);
    char want[128];
    snprintf(want, sizeof want, "x.gguf x.gguf.tmp-%ld-99 ", (long)getppid());
    if (strcmp(listing(buf, sizeof buf), want) != 0) test_note("left: %s", buf);
    CHECK(strcmp(buf, want) == 0);
    CHECK(file_is(path, "whole"));
    return TEST_PASS;
}

/* The tools' handle: the same, and clear errors for what cannot be. */
static int test_output_handle(void) {
    char path[96], buf[256];
    clear_dir();
    snprintf(path, sizeof path, "%s/o.jsonl", dir);
    el_output *o = NULL;
    CHECK(el_output_open(path, &o) == EL_OK && el_output_stream(o) != NULL);
    fputs("{}\n", el_output_stream(o));
    CHECK(el_output_commit(o) == EL_OK);
    CHECK(file_is(path, "{}\n"));
    CHECK(el_output_open(path, &o) == EL_OK);
    el_output_discard(o);
    CHECK(strcmp(listing(buf, sizeof buf), "o.jsonl ") == 0);
    CHECK(el_output_open("/nonexistent-folder/o.jsonl", &o) == EL_ERR_IO && o == NULL);
    CHECK(strstr(el_last_error(), "/nonexistent-folder/o.jsonl: cannot create") != NULL);
    CHECK(el_output_open(NULL, &o) == EL_ERR_INVALID_ARG);
    CHECK(el_output_commit(NULL) == EL_ERR_INVALID_ARG);
    el_output_discard(NULL);
    return TEST_PASS;
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/el-outfile-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    run_test("unnamed", test_unnamed);
    run_test("named", test_named);
    run_test("killed_named_writer", test_killed_named_writer);
    run_test("output_handle", test_output_handle);
    clear_dir();
    rmdir(dir);
    return tests_exit_code();
}
