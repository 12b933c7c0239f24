/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directive.h — the #BB_HARMONIA directive grammar (doc/design.md §4, a contract).
 *
 *   #BB_HARMONIA jobbuffer capacity=200GiB [nodes=2] [pool=nvme]
 *   #BB_HARMONIA iohints w_iter=10m io_volume=50GiB [phases=20]
 *                        [io=write|read|readwrite] [priority=1..10]
 *   #BB_HARMONIA stage_in  source=/pfs/in destination=$HARMONIA_BB/in [type=file|directory]
 *   #BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=/pfs/out [type=...]
 *   #BB_HARMONIA create_persistent name=ckpt capacity=1TiB [pool=nvme]
 *   #BB_HARMONIA use_persistent name=ckpt
 *   #BB_HARMONIA destroy_persistent name=ckpt
 *
 * Directives come from the batch script (lines before the first command) and from
 * `sbatch --bb` (';' or newlines separate directives; the "#BB_HARMONIA" prefix is
 * optional there).  Both plugins and bbmgrd use this one parser.
 *
 * Memory: hu_bb_request_free() releases everything; strings are malloc'd.  The
 * Slurm plugins copy what they keep into xmalloc'd memory.
 */
#ifndef HARMONIA_DIRECTIVE_H
#define HARMONIA_DIRECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutil.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HU_BB_PREFIX "#BB_HARMONIA"
#define HU_BB_MAX_LINE 4096  /* longest directive line accepted */
#define HU_BB_MAX_STAGE 64   /* stage_in + stage_out directives per job */
#define HU_BB_MAX_PERSIST 16 /* persistent-buffer directives per job */
#define HU_BB_MAX_NODES 100000
#define HU_BB_NAME_MAX 63    /* pool and persistent buffer names */
#define HU_BB_PATH_MAX 4000  /* longest stage path */
#define HU_BB_MAX_W_ITER 1e9 /* longest w_iter, seconds (about 31 years) */

typedef enum {
    HU_BB_IO_UNSET = 0,
    HU_BB_IO_WRITE,
    HU_BB_IO_READ,
    HU_BB_IO_READWRITE,
} hu_bb_io_t;

typedef enum {
    HU_BB_TYPE_UNSET = 0,
    HU_BB_TYPE_FILE,
    HU_BB_TYPE_DIRECTORY,
} hu_bb_type_t;

typedef enum {
    HU_BB_PERSIST_CREATE = 0,
    HU_BB_PERSIST_USE,
    HU_BB_PERSIST_DESTROY,
} hu_bb_persist_op_t;

typedef struct {
    char *source;
    char *destination;
    hu_bb_type_t type;
    int line;     /* where it came from (for messages): script line or */
    bool bb_item; /* (true) --bb item number; see hu_bb_where() */
} hu_bb_stage_t;

typedef struct {
    hu_bb_persist_op_t op;
    char *name;
    uint64_t capacity; /* create only */
    char *pool;        /* create only, may be NULL */
    int line;
    bool bb_item; /* line is a --bb item number */
} hu_bb_persist_t;

typedef struct {
    bool has_buffer;
    uint64_t capacity; /* bytes, > 0 */
    uint32_t nodes;    /* 0: let bbmgrd choose */
    char *pool;        /* NULL: default pool */

    bool has_hints;
    double w_iter;       /* seconds, > 0, whole microseconds */
    uint64_t io_volume;  /* bytes per I/O phase, > 0 */
    uint32_t phases;     /* 0: unknown */
    hu_bb_io_t io;       /* HU_BB_IO_UNSET: not given (normalised to write) */
    int priority;        /* 0: not given (normalised to 1) */
    bool hints_learned;  /* filled from history rather than given */
    int interpose;       /* the interposer: 1 yes, -1 no, 0 not given (the site's
                               default, harmonia.conf Interpose) */
    bool interpose_only; /* "iohints interpose=yes|no" alone: the interposer asked
                               for or refused, no hints given (has_hints false) */

    int nstage_in, nstage_out;
    hu_bb_stage_t stage_in[HU_BB_MAX_STAGE];
    hu_bb_stage_t stage_out[HU_BB_MAX_STAGE];

    int npersist;
    hu_bb_persist_t persist[HU_BB_MAX_PERSIST];
} hu_bb_request_t;

/* Where the text comes from, for messages: the script's line numbers, or the
 * position of the item in sbatch --bb. */
typedef enum {
    HU_BB_SRC_SCRIPT = 0, /* lines of a batch script: "line N" */
    HU_BB_SRC_BB_OPTION,  /* sbatch --bb: "--bb item N" */
    HU_BB_SRC_CANONICAL,  /* text written by hu_bb_format(): "directive N" */
} hu_bb_source_t;

/*
 * Extract the #BB_HARMONIA lines of a batch script: after the "#!" line, the leading
 * block of comments and blank lines (as sbatch reads #SBATCH), up to the first
 * command.  Returns a malloc'd string with one directive per line, each prefixed
 * by "@<lineno> " so that later messages name the script's line; "" when there are
 * none.  NULL with errno = ENOMEM.  'script' may be NULL.
 */
char *hu_bb_collect_script(const char *script);

/* True if 'text' holds at least one Harmonia directive (prefix or, with
 * 'bare_ok', a known verb). */
bool hu_bb_has_directives(const char *text, bool bare_ok);

/*
 * Parse directive text (from hu_bb_collect_script(), from --bb, or canonical).  Into
 * 'req', which must be zeroed or previously parsed: directives are merged, so the
 * script's and --bb's directives can be parsed into one request (a second jobbuffer
 * or iohints is an error).  'len' bounds the text (NUL bytes inside are refused).
 * Returns 0, or -1 with err naming the line, the verb, the key and the problem.
 */
int hu_bb_parse(hu_bb_request_t *req, const char *text, size_t len, hu_bb_source_t src,
                hu_error_t *err);

/*
 * Whole-request checks after parsing: stage directives need a buffer (jobbuffer or
 * use_persistent), an iohints phase may not exceed the buffer capacity, and
 * normalisation of defaults (io=write, priority=1).  Returns 0 or -1 with err.
 */
int hu_bb_validate(hu_bb_request_t *req, hu_error_t *err);

/*
 * Check stage paths on this host: stage_in sources must exist and match 'type';
 * stage_out destinations' parent directories must exist.  Returns 0 or -1.
 */
int hu_bb_check_paths(const hu_bb_request_t *req, hu_error_t *err);

/* Where a directive came from, for messages: "line N" of the script, or
 * "--bb item N" when bb_item.  Returns buf. */
const char *hu_bb_where(int line, bool bb_item, char *buf, size_t len);

/*
 * DataWarp's lines in a batch script ("#DW jobdw ...", "#DW persistentdw ...",
 * "#BB create_persistent ..."), which burst_buffer/harmonia does not read: in the
 * leading block of the script (as hu_bb_collect_script() reads it).  Returns 0
 * when there is none, -1 with err naming the first one's line and the
 * #BB_HARMONIA directive to write instead.
 */
int hu_bb_check_foreign(const char *script, hu_error_t *err);

/* One DataWarp directive (text[0..n), e.g. a --bb item): -1 when it is not one,
 * 1 with its #BB_HARMONIA equivalent in out (as hu_bb_check_foreign() gives it),
 * 0 when it has none. */
int hu_bb_dw_equivalent(const char *text, size_t n, char *out, size_t outlen);

/* Canonical text: one "#BB_HARMONIA ..." line per directive, sizes in the largest
 * exact unit, durations in seconds.  hu_bb_parse() of it gives the same request.
 * Returns a malloc'd string, or NULL with errno set. */
char *hu_bb_format(const hu_bb_request_t *req);

void hu_bb_request_free(hu_bb_request_t *req); /* frees contents; accepts NULL */

/* The one name rule of persistent buffers and pools, the same in the directives,
 * the plugin, bbmgrd's API and bbnoded: a letter, then letters, digits, '_', '-'
 * or '.', at most HU_BB_NAME_MAX; so never ".", "..", a path, or a name of the
 * reserved ".harmonia*" family (doc/security.md). */
bool hu_bb_name_ok(const char *name);
/* The one rule of stage paths, the same in the directives (after the job buffer's
 * prefix), bbmgrd's API and bbnoded: absolute, at most HU_BB_PATH_MAX bytes, no "."
 * or ".." component, no newline. */
bool hu_bb_path_ok(const char *path);

const char *hu_bb_io_str(hu_bb_io_t io);
const char *hu_bb_type_str(hu_bb_type_t t);

/* Size formatted for a directive: "200GiB", "1500MB", "123B" (hu_size_str_exact()). */
const char *hu_bb_size_str(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_DIRECTIVE_H */
