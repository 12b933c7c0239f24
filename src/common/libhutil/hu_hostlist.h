/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hu_hostlist.h — Slurm-style host lists: "bb[01-04,07],io1,rack[1-2]n[0-1]".
 * bbmgr (bbmgr.yaml's node sets) and bbsim (a workload's buffer nodes) expand them
 * here.  Each caller gives its limits; a refusal comes with a structured reason so
 * that each words it its own way, and with a default wording in the hu_error_t.
 */
#ifndef HARMONIA_HU_HOSTLIST_H
#define HARMONIA_HU_HOSTLIST_H

#include <stddef.h>

#include "hutil.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Names of letters, digits, '-', '_' and '.' only; blanks around an item ignored; a
 * nested '[' or a ']' without its '[' refused before anything is expanded.
 * Without it a name is any text but ',', '[' and ']', blanks included, and brackets
 * are checked as they are expanded (a stray ']' when the name it is in is made).
 */
#define HU_HOSTLIST_STRICT 0x1

typedef struct {
    int max_names;           /* names per expression (> 0): "n[1-999999999]" refused */
    size_t max_name_len;     /* bytes of the longest name (> 0, < 256) */
    unsigned long max_bound; /* largest number of a range; 0: ULONG_MAX */
    int flags;               /* HU_HOSTLIST_* */
} hu_hostlist_opts_t;

typedef enum {
    HU_HL_OK,
    HU_HL_NOMEM,
    HU_HL_EMPTY_LIST,        /* nothing (but blanks) */
    HU_HL_EMPTY_NAME,        /* an empty item: "a,,b", ",a" */
    HU_HL_TRAILING_COMMA,    /* "a," */
    HU_HL_BAD_CHAR,          /* .c: a character a name may not hold (STRICT) */
    HU_HL_NAME_TOO_LONG,     /* a name longer than max_name_len */
    HU_HL_NESTED,            /* "a[1[2]]" */
    HU_HL_UNBALANCED_OPEN,   /* "a[1" */
    HU_HL_UNBALANCED_CLOSE,  /* "a]" */
    HU_HL_EMPTY_RANGE,       /* "a[]" */
    HU_HL_RANGE_START,       /* .c: a range that does not start with a digit */
    HU_HL_NO_UPPER,          /* "a[1-]" */
    HU_HL_BOUND_TOO_LARGE,   /* a bound past max_bound */
    HU_HL_DECREASING,        /* .lo > .hi */
    HU_HL_UNEXPECTED,        /* .c after a range: "a[1x]" */
    HU_HL_EMPTY_AFTER_COMMA, /* "a[1,]" */
    HU_HL_TOO_MANY,          /* more than max_names names */
} hu_hostlist_why_t;

typedef struct {
    hu_hostlist_why_t why;
    char c;               /* HU_HL_BAD_CHAR, HU_HL_RANGE_START, HU_HL_UNEXPECTED */
    unsigned long lo, hi; /* HU_HL_DECREASING */
} hu_hostlist_fail_t;

/*
 * Expand expr into a malloc'd array of malloc'd names (*names, *count), in the order
 * written: list := item (',' item)* ; item := (text | '[' ranges ']')+ ;
 * ranges := range (',' range)* ; range := N | N '-' M, N <= M, numbers keeping the
 * width of N ("bb[01-10]" gives bb01..bb10).  Returns 0, or -1 with errno = EINVAL,
 * ERANGE or ENOMEM, *fail (if not NULL) set and err filled ("empty range '[]' in
 * host list", ...).  Never allocates more than max_names names.
 */
int hu_hostlist_expand(const char *expr, const hu_hostlist_opts_t *opts, char ***names, int *count,
                       hu_hostlist_fail_t *fail, hu_error_t *err);

/* Free what hu_hostlist_expand() returned.  Accepts NULL; keeps errno. */
void hu_hostlist_free(char **names, int count);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HU_HOSTLIST_H */
