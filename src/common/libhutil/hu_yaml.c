/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hu_yaml.c — libyaml's event stream turned into one tree per document, each node
 * with its line and column (hu_yaml.h).  Limits on depth and node count are checked
 * as the events come, before the node is made.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "hu_yaml.h"

typedef struct {
    char *name;
    hu_ynode_t *node;
} anchor_t;

struct hu_ydoc {
    hu_ynode_t **nodes; /* every node, owned */
    size_t n, cap;
    hu_ynode_t *root;
    anchor_t *anchors;
    size_t nanchors, capanchors;
};

struct hu_yaml {
    yaml_parser_t p;
    const char *buf;
    size_t len;
    hu_yaml_opts_t o;
    size_t nnodes;
    int ndocs;
    bool done;
    hu_yaml_fail_t failed; /* why != HU_YAML_OK: the reader only fails */
    hu_ynode_t **stack;    /* open collections of the document being read */
    size_t depth, capstack;
};

/* Record the failure and its default wording; returns -1. */
static int yfail(hu_yaml_t *y, hu_yaml_why_t why, int line, int col, const char *problem,
                 const char *context, hu_yaml_fail_t *fail, hu_error_t *err)
{
    y->failed = (hu_yaml_fail_t){ why, line, col, problem, context };
    if (fail)
        *fail = y->failed;
    switch (why) {
    case HU_YAML_NOMEM:
        hu_errprintf(err, "%d:%d: out of memory", line, col);
        errno = ENOMEM;
        return -1;
    case HU_YAML_SYNTAX:
    case HU_YAML_ENCODING:
        hu_errprintf(err, "%d:%d: YAML syntax error: %s%s%s", line, col,
                     problem ? problem : "unknown error", context ? " " : "",
                     context ? context : "");
        break;
    case HU_YAML_ALIAS:
        hu_errprintf(err, "%d:%d: anchors and aliases are not supported", line, col);
        break;
    case HU_YAML_DEPTH:
        hu_errprintf(err, "%d:%d: nesting deeper than %d levels", line, col, y->o.max_depth);
        break;
    case HU_YAML_NODES:
        hu_errprintf(err, "%d:%d: too many YAML nodes (more than %zu)", line, col, y->o.max_nodes);
        break;
    case HU_YAML_DOCS:
        hu_errprintf(err, "%d:%d: only one YAML document is allowed", line, col);
        break;
    case HU_YAML_OK:
        break;
    }
    errno = EINVAL;
    return -1;
}

hu_yaml_t *hu_yaml_open(const char *buf, size_t len, const hu_yaml_opts_t *opts, hu_error_t *err)
{
    hu_yaml_t *y = calloc(1, sizeof(*y));

    if (!y || !yaml_parser_initialize(&y->p)) {
        free(y);
        errno = ENOMEM;
        hu_errprintf(err, "cannot initialise the YAML parser");
        return NULL;
    }
    yaml_parser_set_input_string(&y->p, (const unsigned char *)buf, len);
    y->buf = buf;
    y->len = len;
    if (opts)
        y->o = *opts;
    return y;
}

void hu_yaml_close(hu_yaml_t *y)
{
    if (y) {
        int saved = errno;
        yaml_parser_delete(&y->p);
        free(y->stack);
        free(y);
        errno = saved;
    }
}

hu_ynode_t *hu_ydoc_root(const hu_ydoc_t *doc)
{
    return doc->root;
}

void hu_ydoc_free(hu_ydoc_t *doc)
{
    if (doc) {
        int saved = errno;
        for (size_t i = 0; i < doc->n; i++) {
            free(doc->nodes[i]->kids);
            free(doc->nodes[i]->str);
            free(doc->nodes[i]);
        }
        for (size_t i = 0; i < doc->nanchors; i++)
            free(doc->anchors[i].name);
        free(doc->anchors);
        free(doc->nodes);
        free(doc);
        errno = saved;
    }
}

/* Grow *v (of *cap items of size sz) to hold one more than n. */
static int grow(void *v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    void *nv = realloc(*(void **)v, nc * sz);
    if (!nv)
        return -1;
    *(void **)v = nv;
    *cap = nc;
    return 0;
}

/* A new node of doc, owned by it. */
static hu_ynode_t *node_new(hu_ydoc_t *doc, hu_yaml_type_t type, int line, int col)
{
    hu_ynode_t *n;
    if (grow(&doc->nodes, &doc->cap, doc->n, sizeof(*doc->nodes)) < 0
        || !(n = calloc(1, sizeof(*n))))
        return NULL;
    n->type = type;
    n->line = line;
    n->col = col;
    doc->nodes[doc->n++] = n;
    return n;
}

/* Line and column (1-based) of a byte offset, for libyaml's reader errors. */
static void offset_mark(const hu_yaml_t *y, size_t off, int *line, int *col)
{
    int l = 1, k = 1;
    for (size_t i = 0; i < off && i < y->len; i++) {
        if (y->buf[i] == '\n') {
            l++;
            k = 1;
        } else {
            k++;
        }
    }
    *line = l;
    *col = k;
}

static int parser_fail(hu_yaml_t *y, hu_yaml_fail_t *fail, hu_error_t *err)
{
    yaml_parser_t *p = &y->p;
    int line, col;

    if (p->error == YAML_MEMORY_ERROR)
        return yfail(y, HU_YAML_NOMEM, 1, 1, NULL, NULL, fail, err);
    if (p->error == YAML_READER_ERROR) {
        offset_mark(y, p->problem_offset, &line, &col);
        return yfail(y, HU_YAML_ENCODING, line, col, p->problem, NULL, fail, err);
    }
    return yfail(y, HU_YAML_SYNTAX, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1,
                 p->problem, p->context, fail, err);
}

static const char *event_anchor(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return (const char *)ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return (const char *)ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return (const char *)ev->data.mapping_start.anchor;
    case YAML_ALIAS_EVENT:
        return (const char *)ev->data.alias.anchor;
    default:
        return NULL;
    }
}

/* The node of one event (NULL with *rc = 0: the event makes none). */
static hu_ynode_t *event_node(hu_yaml_t *y, hu_ydoc_t *doc, const yaml_event_t *ev, int *rc,
                              hu_yaml_fail_t *fail, hu_error_t *err)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    const char *anchor = event_anchor(ev);
    hu_yaml_type_t type;
    hu_ynode_t *n;

    *rc = 0;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        type = HU_YAML_SCALAR;
        break;
    case YAML_SEQUENCE_START_EVENT:
        type = HU_YAML_SEQ;
        break;
    case YAML_MAPPING_START_EVENT:
        type = HU_YAML_MAP;
        break;
    case YAML_ALIAS_EVENT:
        if (!y->o.aliases) {
            *rc = yfail(y, HU_YAML_ALIAS, line, col, NULL, NULL, fail, err);
            return NULL;
        }
        for (size_t i = 0; i < doc->nanchors; i++)
            if (!strcmp(doc->anchors[i].name, anchor))
                return doc->anchors[i].node;
        *rc = yfail(y, HU_YAML_SYNTAX, line, col, "found undefined alias", NULL, fail, err);
        return NULL;
    default:
        return NULL;
    }
    if (anchor && !y->o.aliases) {
        *rc = yfail(y, HU_YAML_ALIAS, line, col, NULL, NULL, fail, err);
        return NULL;
    }
    if (type != HU_YAML_SCALAR && y->o.max_depth > 0 && y->depth >= (size_t)y->o.max_depth) {
        *rc = yfail(y, HU_YAML_DEPTH, line, col, NULL, NULL, fail, err);
        return NULL;
    }
    if (y->o.max_nodes > 0 && ++y->nnodes > y->o.max_nodes) {
        *rc = yfail(y, HU_YAML_NODES, line, col, NULL, NULL, fail, err);
        return NULL;
    }
    if (!(n = node_new(doc, type, line, col)))
        goto nomem;
    if (type == HU_YAML_SCALAR) {
        if (!(n->str = malloc(ev->data.scalar.length + 1)))
            goto nomem;
        memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
        n->str[ev->data.scalar.length] = '\0';
        n->len = ev->data.scalar.length;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    }
    if (anchor) {
        for (size_t i = 0; i < doc->nanchors; i++)
            if (!strcmp(doc->anchors[i].name, anchor)) {
                *rc = yfail(y, HU_YAML_SYNTAX, line, col, "second occurrence",
                            "found duplicate anchor; first occurrence", fail, err);
                return NULL;
            }
        if (grow(&doc->anchors, &doc->capanchors, doc->nanchors, sizeof(*doc->anchors)) < 0
            || !(doc->anchors[doc->nanchors].name = strdup(anchor)))
            goto nomem;
        doc->anchors[doc->nanchors++].node = n;
    }
    return n;
nomem:
    *rc = yfail(y, HU_YAML_NOMEM, line, col, NULL, NULL, fail, err);
    return NULL;
}

int hu_yaml_next(hu_yaml_t *y, hu_ydoc_t **doc, hu_yaml_fail_t *fail, hu_error_t *err)
{
    hu_ydoc_t *d = NULL;

    if (y->failed.why != HU_YAML_OK) {
        hu_yaml_fail_t f = y->failed;
        return yfail(y, f.why, f.line, f.col, f.problem, f.context, fail, err);
    }
    if (y->done)
        return 0;
    for (;;) {
        yaml_event_t ev;
        hu_ynode_t *n;
        int rc;
        if (!yaml_parser_parse(&y->p, &ev)) {
            parser_fail(y, fail, err);
            goto error;
        }
        int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            yaml_event_delete(&ev);
            y->done = true;
            return 0; /* a document always ends before the stream */
        case YAML_DOCUMENT_START_EVENT:
            if (y->o.one_doc && y->ndocs > 0) {
                yfail(y, HU_YAML_DOCS, line, col, NULL, NULL, fail, err);
                goto error_ev;
            }
            y->ndocs++;
            y->depth = 0;
            if (!(d = calloc(1, sizeof(*d)))) {
                yfail(y, HU_YAML_NOMEM, line, col, NULL, NULL, fail, err);
                goto error_ev;
            }
            break;
        case YAML_DOCUMENT_END_EVENT:
            yaml_event_delete(&ev);
            *doc = d;
            return 1;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (y->depth > 0)
                y->depth--;
            break;
        default:
            if (!d)
                break;
            if (!(n = event_node(y, d, &ev, &rc, fail, err))) {
                if (rc < 0)
                    goto error_ev;
                break;
            }
            if (y->depth > 0) {
                hu_ynode_t *parent = y->stack[y->depth - 1];
                if (grow(&parent->kids, &parent->cap, parent->n, sizeof(*parent->kids)) < 0) {
                    yfail(y, HU_YAML_NOMEM, line, col, NULL, NULL, fail, err);
                    goto error_ev;
                }
                parent->kids[parent->n++] = n;
            } else {
                d->root = n;
            }
            if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
                if (grow(&y->stack, &y->capstack, y->depth, sizeof(*y->stack)) < 0) {
                    yfail(y, HU_YAML_NOMEM, line, col, NULL, NULL, fail, err);
                    goto error_ev;
                }
                y->stack[y->depth++] = n;
            }
            break;
        }
        yaml_event_delete(&ev);
        continue;
    error_ev:
        yaml_event_delete(&ev);
        goto error;
    }
error:
    hu_ydoc_free(d);
    return -1;
}

/* Index of key's node among map's kids (its value follows it), or map->n. */
static size_t find_key(const hu_ynode_t *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const hu_ynode_t *k = map->kids[i];
        if (k->type == HU_YAML_SCALAR && !strcmp(k->str, key))
            return i;
    }
    return map->n;
}

hu_ynode_t *hu_ymap_get(const hu_ynode_t *map, const char *key)
{
    size_t i = find_key(map, key);
    return i < map->n ? map->kids[i + 1] : NULL;
}

hu_ynode_t *hu_ymap_key(const hu_ynode_t *map, const char *key)
{
    size_t i = find_key(map, key);
    return i < map->n ? map->kids[i] : NULL;
}
