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
 * Memory: hbb_request_free() releases everything; strings are malloc'd.  The
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

#define HBB_PREFIX        "#BB_HARMONIA"
#define HBB_MAX_LINE      4096      /* longest directive line accepted */
#define HBB_MAX_STAGE     64        /* stage_in + stage_out directives per job */
#define HBB_MAX_PERSIST   16        /* persistent-buffer directives per job */
#define HBB_MAX_NODES     100000
#define HBB_NAME_MAX      63        /* pool and persistent buffer names */
#define HBB_MAX_W_ITER    1e9       /* longest w_iter, seconds (about 31 years) */

typedef enum {
    HBB_IO_UNSET = 0,
    HBB_IO_WRITE,
    HBB_IO_READ,
    HBB_IO_READWRITE,
} hbb_io_t;

typedef enum {
    HBB_TYPE_UNSET = 0,
    HBB_TYPE_FILE,
    HBB_TYPE_DIRECTORY,
} hbb_type_t;

typedef enum {
    HBB_PERSIST_CREATE = 0,
    HBB_PERSIST_USE,
    HBB_PERSIST_DESTROY,
} hbb_persist_op_t;

typedef struct {
    char *source;
    char *destination;
    hbb_type_t type;
    int line;               /* where it came from (for messages) */
} hbb_stage_t;

typedef struct {
    hbb_persist_op_t op;
    char *name;
    uint64_t capacity;      /* create only */
    char *pool;             /* create only, may be NULL */
    int line;
} hbb_persist_t;

typedef struct {
    bool has_buffer;
    uint64_t capacity;      /* bytes, > 0 */
    uint32_t nodes;         /* 0: let bbmgrd choose */
    char *pool;             /* NULL: default pool */

    bool has_hints;
    double w_iter;          /* seconds, > 0, whole microseconds */
    uint64_t io_volume;     /* bytes per I/O phase, > 0 */
    uint32_t phases;        /* 0: unknown */
    hbb_io_t io;            /* HBB_IO_UNSET: not given (normalised to write) */
    int priority;           /* 0: not given (normalised to 1) */
    bool hints_learned;     /* filled from history rather than given */

    int nstage_in, nstage_out;
    hbb_stage_t stage_in[HBB_MAX_STAGE];
    hbb_stage_t stage_out[HBB_MAX_STAGE];

    int npersist;
    hbb_persist_t persist[HBB_MAX_PERSIST];
} hbb_request_t;

/* Where the text comes from, for messages: the script's line numbers, or the
 * position of the item in sbatch --bb. */
typedef enum {
    HBB_SRC_SCRIPT = 0,     /* lines of a batch script: "line N" */
    HBB_SRC_BB_OPTION,      /* sbatch --bb: "--bb item N" */
    HBB_SRC_CANONICAL,      /* text written by hbb_format(): "directive N" */
} hbb_source_t;

/*
 * Extract the #BB_HARMONIA lines of a batch script: after the "#!" line, the leading
 * block of comments and blank lines (as sbatch reads #SBATCH), up to the first
 * command.  Returns a malloc'd string with one directive per line, each prefixed
 * by "@<lineno> " so that later messages name the script's line; "" when there are
 * none.  NULL with errno = ENOMEM.  'script' may be NULL.
 */
char *hbb_collect_script(const char *script);

/* True if 'text' holds at least one Harmonia directive (prefix or, with
 * 'bare_ok', a known verb). */
bool hbb_has_directives(const char *text, bool bare_ok);

/*
 * Parse directive text (from hbb_collect_script(), from --bb, or canonical).  Into
 * 'req', which must be zeroed or previously parsed: directives are merged, so the
 * script's and --bb's directives can be parsed into one request (a second jobbuffer
 * or iohints is an error).  'len' bounds the text (NUL bytes inside are refused).
 * Returns 0, or -1 with err naming the line, the verb, the key and the problem.
 */
int hbb_parse(hbb_request_t *req, const char *text, size_t len, hbb_source_t src,
              hu_error_t *err);

/*
 * Whole-request checks after parsing: stage directives need a buffer (jobbuffer or
 * use_persistent), an iohints phase may not exceed the buffer capacity, and
 * normalisation of defaults (io=write, priority=1).  Returns 0 or -1 with err.
 */
int hbb_validate(hbb_request_t *req, hu_error_t *err);

/*
 * Check stage paths on this host: stage_in sources must exist and match 'type';
 * stage_out destinations' parent directories must exist.  Returns 0 or -1.
 */
int hbb_check_paths(const hbb_request_t *req, hu_error_t *err);

/* Canonical text: one "#BB_HARMONIA ..." line per directive, sizes in the largest
 * exact unit, durations in seconds.  hbb_parse() of it gives the same request.
 * Returns a malloc'd string, or NULL with errno set. */
char *hbb_format(const hbb_request_t *req);

void hbb_request_free(hbb_request_t *req);   /* frees contents; accepts NULL */

const char *hbb_io_str(hbb_io_t io);
const char *hbb_type_str(hbb_type_t t);

/* Size formatted for a directive: "200GiB", "1500MB", "123B". */
const char *hbb_size_str(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_DIRECTIVE_H */
