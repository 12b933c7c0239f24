/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hu_yaml.h — YAML read into a tree that keeps every node's line and column, so that
 * a reader of bbmgr.yaml or of a bbsim workload can say "FILE:LINE:COL: reason".
 * Built on libyaml's event parser; in libhutil_yaml.la (programs that link libyaml),
 * not in libhutil.la.  A failure comes with a structured reason and position, so that
 * each caller words it its own way, and with a default wording in the hu_error_t.
 */
#ifndef HARMONIA_HU_YAML_H
#define HARMONIA_HU_YAML_H

#include <stdbool.h>
#include <stddef.h>

#include "hutil.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { HU_YAML_SCALAR, HU_YAML_MAP, HU_YAML_SEQ } hu_yaml_type_t;

typedef struct hu_ynode hu_ynode_t;
struct hu_ynode {
    hu_yaml_type_t type;
    char *str;         /* scalar: its text, NUL-terminated (may hold NULs) */
    size_t len;        /* scalar: bytes of str */
    bool plain;        /* scalar: written plain (not quoted, not a block) */
    int line, col;     /* 1-based, where the node starts */
    hu_ynode_t **kids; /* map: key, value, key, value, ...; seq: the items */
    size_t n, cap;
};

/* A document: owns its nodes (an alias shares the anchored node, as libyaml's
 * documents do, so the tree may be a graph). */
typedef struct hu_ydoc hu_ydoc_t;

typedef struct {
    int max_depth;    /* nested collections; 0: no limit */
    size_t max_nodes; /* nodes of all documents read; 0: no limit */
    bool aliases;     /* accept anchors and aliases (else refused) */
    bool one_doc;     /* a second document is refused (HU_YAML_DOCS) */
} hu_yaml_opts_t;

typedef enum {
    HU_YAML_OK,
    HU_YAML_NOMEM,    /* out of memory */
    HU_YAML_SYNTAX,   /* libyaml's problem and context */
    HU_YAML_ENCODING, /* libyaml's reader: bad UTF-8 or control character */
    HU_YAML_ALIAS,    /* an anchor or an alias without opts.aliases */
    HU_YAML_DEPTH,    /* more than opts.max_depth nested collections */
    HU_YAML_NODES,    /* more than opts.max_nodes nodes */
    HU_YAML_DOCS,     /* a second document with opts.one_doc */
} hu_yaml_why_t;

typedef struct {
    hu_yaml_why_t why;
    int line, col;       /* 1-based position of the problem */
    const char *problem; /* HU_YAML_SYNTAX, HU_YAML_ENCODING: libyaml's words */
    const char *context; /* HU_YAML_SYNTAX: libyaml's context, or NULL */
} hu_yaml_fail_t;

typedef struct hu_yaml hu_yaml_t;

/* A reader of buf[0..len) (not copied: it must outlive the reader).  NULL with
 * errno = ENOMEM and err filled on failure. */
hu_yaml_t *hu_yaml_open(const char *buf, size_t len, const hu_yaml_opts_t *opts, hu_error_t *err);

/* The next document of the stream: 1 and *doc (free it with hu_ydoc_free()), 0 at
 * the end of the stream, or -1 with errno (EINVAL, ENOMEM), *fail filled (its
 * strings live as long as the reader) and err = "LINE:COL: reason".  After -1 the
 * reader only fails. */
int hu_yaml_next(hu_yaml_t *y, hu_ydoc_t **doc, hu_yaml_fail_t *fail, hu_error_t *err);

/* Free a reader; accepts NULL, keeps errno. */
void hu_yaml_close(hu_yaml_t *y);

/* The document's root node (never NULL). */
hu_ynode_t *hu_ydoc_root(const hu_ydoc_t *doc);

/* Free a document and its nodes; accepts NULL, keeps errno. */
void hu_ydoc_free(hu_ydoc_t *doc);

/* The value of key in map (a scalar key, compared as a C string), or NULL. */
hu_ynode_t *hu_ymap_get(const hu_ynode_t *map, const char *key);

/* The key node of key in map, or NULL. */
hu_ynode_t *hu_ymap_key(const hu_ynode_t *map, const char *key);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HU_YAML_H */
