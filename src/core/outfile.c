/* outfile.c - files that appear whole or not at all (see outfile.h). */
#include "core/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether name is "<base>.tmp-<pid>-<n>" for a pid that no longer runs. */
static bool is_stale_temporary(const char *name, const char *base) {
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp-", 5) != 0) return false;
    char *end;
    long pid = strtol(name + n + 5, &end, 10);
    if (end == name + n + 5 || *end != '-' || pid <= 0) return false;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* A killed writer's temporary cannot be removed by itself: the next writer of the same target
 * does it. */
static void remove_stale_temporaries(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (is_stale_temporary(e->d_name, base)) (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

static char *temporary_name(const char *path) {
    static unsigned counter;
    unsigned n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    size_t len = strlen(path) + 48;
    char *tmp = malloc(len);
    if (tmp) snprintf(tmp, len, "%s.tmp-%ld-%u", path, (long)getpid(), n);
    return tmp;
}

/* An unnamed file in dir, or -1 where the filesystem (or kernel) has none. */
static int open_unnamed(const char *dir) {
#ifdef O_TMPFILE
    return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
#else
    (void)dir;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

/* Errors of open(O_TMPFILE) that mean "not supported here", not "cannot write here". */
static bool unnamed_unsupported(int e) {
    return e == EOPNOTSUPP || e == EISDIR || e == EINVAL;
}

static void outfile_free(el_outfile *o) {
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

static el_status outfile_open(el_outfile *o, const char *path, bool named) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    char *dir = folder_of(path);
    o->path = strdup(path);
    o->tmp = temporary_name(path);
    if (!dir || !o->path || !o->tmp) {
        free(dir);
        outfile_free(o);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    remove_stale_temporaries(dir, base_of(path));
    o->fd = named ? -1 : open_unnamed(dir);
    o->unnamed = o->fd >= 0;
    if (o->fd < 0 && (named || unnamed_unsupported(errno)))
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    int e = errno;
    free(dir);
    if (o->fd < 0) {
        el_status st = el_error(EL_ERR_IO, "%s: cannot create: %s", path, strerror(e));
        outfile_free(o);
        return st;
    }
    if (!(o->f = fdopen(o->fd, "wb"))) {
        e = errno;
        el_outfile_discard(o);
        return el_error(EL_ERR_IO, "%s: cannot create: %s", path, strerror(e));
    }
    return EL_OK;
}

el_status el_outfile_open(el_outfile *o, const char *path) {
    return outfile_open(o, path, false);
}

el_status el_outfile_open_named(el_outfile *o, const char *path) {
    return outfile_open(o, path, true);
}

/* Gives the unnamed file its temporary name. */
static int link_unnamed(const el_outfile *o) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
    /* without /proc; allowed only with CAP_DAC_READ_SEARCH */
    return linkat(o->fd, "", AT_FDCWD, o->tmp, AT_EMPTY_PATH);
}

el_status el_outfile_commit(el_outfile *o) {
    /* on disk before it gets its name, so that a crash cannot leave a complete-looking file
     * whose data never got there */
    bool ok = fflush(o->f) == 0 && !ferror(o->f) && fdatasync(o->fd) == 0;
    ok = ok && (!o->unnamed || link_unnamed(o) == 0);
    bool named = !o->unnamed || ok;
    ok = ok && rename(o->tmp, o->path) == 0;
    int e = errno;
    if (fclose(o->f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok && named) (void)unlink(o->tmp);
    el_status st = ok ? EL_OK
                      : el_error(EL_ERR_IO, "%s: cannot write: %s", o->path, strerror(e ? e : EIO));
    outfile_free(o);
    return st;
}

void el_outfile_discard(el_outfile *o) {
    if (o->f)
        fclose(o->f);
    else if (o->fd >= 0)
        close(o->fd);
    if (o->fd >= 0 && !o->unnamed) (void)unlink(o->tmp);
    outfile_free(o);
}

/* Whether a new file can be made in dir, by making and dropping one. */
static bool folder_takes_files(const char *dir) {
    int fd = open_unnamed(dir);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    if (!unnamed_unsupported(errno)) return false;
    size_t len = strlen(dir) + 2;
    char *prefix = malloc(len);
    if (!prefix) return false;
    snprintf(prefix, len, "%s/", dir);
    char *tmp = temporary_name(prefix);
    free(prefix);
    if (!tmp) return false;
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
        close(fd);
        (void)unlink(tmp);
    }
    free(tmp);
    return fd >= 0;
}

el_status el_outfile_check_folder(const char *path) {
    char *dir = folder_of(path);
    if (!dir) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = EL_OK;
    if (!folder_takes_files(dir))
        st = el_error(EL_ERR_IO, "%s: cannot write into the folder %s: %s", path, dir,
                      strerror(errno));
    free(dir);
    return st;
}

/* The tools' handle (edgelora-tools.h) on the same mechanism. */
struct el_output {
    el_outfile file;
};

el_status el_output_open(const char *path, el_output **out) {
    if (!path || !out) return el_error(EL_ERR_INVALID_ARG, "el_output_open: NULL argument");
    *out = NULL;
    el_output *o = malloc(sizeof *o);
    if (!o) return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    el_status st = el_outfile_open(&o->file, path);
    if (st) {
        free(o);
        return st;
    }
    *out = o;
    return EL_OK;
}

FILE *el_output_stream(el_output *o) { return o ? o->file.f : NULL; }

el_status el_output_commit(el_output *o) {
    if (!o) return el_error(EL_ERR_INVALID_ARG, "el_output_commit: NULL output");
    el_status st = el_outfile_commit(&o->file);
    free(o);
    return st;
}

void el_output_discard(el_output *o) {
    if (!o) return;
    el_outfile_discard(&o->file);
    free(o);
}
