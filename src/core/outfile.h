/* outfile.h - writing a file so that it appears whole or not at all, even if the process is
 * killed mid-write.
 *
 * On Linux the data goes into an unnamed file (O_TMPFILE) in the target's folder: a process
 * killed while writing leaves nothing, since the kernel frees an unnamed file with its last
 * descriptor. At commit the file is synced, linked under a temporary name ("TARGET.tmp-PID-N")
 * and renamed over the target, since linkat cannot replace an existing file. Where the
 * filesystem has no O_TMPFILE, the data is written under that temporary name from the start.
 * Either way a temporary name can outlive a killed process, so opening removes the temporaries
 * of the same target left by processes that no longer exist. */
#ifndef EL_CORE_OUTFILE_H
#define EL_CORE_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "edgelora-tools.h"

typedef struct el_outfile {
    FILE *f;         /* buffered writes; fd is its descriptor, for unbuffered ones */
    int fd;
    bool unnamed;    /* O_TMPFILE: no name until commit */
    char *path;      /* the target */
    char *tmp;       /* the temporary name: "<path>.tmp-<pid>-<n>" */
} el_outfile;

/* Opens a new output for path (mode 0666 less the umask). Use either o->f or o->fd, not both
 * (or fflush o->f before writing to o->fd). */
el_status el_outfile_open(el_outfile *o, const char *path);

/* The same, always through the temporary name (what el_outfile_open does where the filesystem
 * has no O_TMPFILE), so that path can be tested everywhere. */
el_status el_outfile_open_named(el_outfile *o, const char *path);

/* Flushes, syncs and puts the file in place of path atomically; closes it in every case (on
 * failure nothing is left behind). */
el_status el_outfile_commit(el_outfile *o);

/* Drops the output: closes it and leaves no file behind. */
void el_outfile_discard(el_outfile *o);

/* Whether path could be written: its folder exists and takes new files (checked by making and
 * dropping one, since permission bits alone say nothing for root). For a long job, before it
 * starts rather than when it ends. */
el_status el_outfile_check_folder(const char *path);

#endif
