/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directive.c — the #BB_HARMONIA grammar (doc/design.md §4).
 *
 * A directive is a verb followed by key=value pairs separated by blanks.  Values
 * may be double-quoted ("a b", with \" and \\ escapes) to hold blanks.  Every error
 * names where the directive came from (script line, --bb item), the verb and the
 * key, and what is wrong; hu_bb_parse() leaves 'req' as it was when it fails.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "directive.h"
#include "hu_error.h"

/* ------------------------------------------------------------------ helpers */

typedef struct {
    const char *where; /* "line 3", "--bb item 2" */
    const char *verb;
    bool bb_item; /* the line number is a --bb item's */
} ctx_t;

/* Fill err with "#BB_HARMONIA <where>: <verb>: <message>"; returns -1. */
static int fail(hu_error_t *err, const ctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(hu_error_t *err, const ctx_t *c, const char *fmt, ...)
{
    hu_error_t m;
    va_list ap;

    va_start(ap, fmt);
    hu_verrprintf(&m, fmt, ap);
    va_end(ap);
    errno = EINVAL;
    return hu_errprintf(err, "#BB_HARMONIA %s: %s%s%s", c->where, c->verb ? c->verb : "",
                        c->verb ? ": " : "", m.text);
}

#define FAIL(err, c, ...) return fail((err), (c), __VA_ARGS__)

static const char *verbs[] = {
    "jobbuffer",         "iohints",        "stage_in",           "stage_out",
    "create_persistent", "use_persistent", "destroy_persistent", NULL,
};

enum { V_JOBBUFFER, V_IOHINTS, V_STAGE_IN, V_STAGE_OUT, V_CREATE, V_USE, V_DESTROY };

static int verb_index(const char *s, size_t n)
{
    for (int i = 0; verbs[i]; i++)
        if (strlen(verbs[i]) == n && strncmp(verbs[i], s, n) == 0)
            return i;
    return -1;
}

/* Keys each verb takes; "!" marks a required key. */
static const char *const verb_keys[][8] = {
    [V_JOBBUFFER] = { "!capacity", "nodes", "pool", NULL },
    [V_IOHINTS] = { "!w_iter", "!io_volume", "phases", "io", "priority", "source", "interpose",
                    NULL },
    [V_STAGE_IN] = { "!source", "!destination", "type", NULL },
    [V_STAGE_OUT] = { "!source", "!destination", "type", NULL },
    [V_CREATE] = { "!name", "!capacity", "pool", NULL },
    [V_USE] = { "!name", NULL },
    [V_DESTROY] = { "!name", NULL },
};

#define MAX_KV 8

typedef struct {
    char key[32];
    char *val; /* malloc'd, unquoted */
} kv_t;

static void kv_clear(kv_t *kv, int n)
{
    for (int i = 0; i < n; i++) {
        free(kv[i].val);
        kv[i].val = NULL;
    }
}

static const char *kv_get(kv_t *kv, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].val;
    return NULL;
}

static void list_keys(int v, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; verb_keys[v][i]; i++) {
        const char *k = verb_keys[v][i];
        if (*k == '!')
            k++;
        if (i)
            strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, k, len - strlen(buf) - 1);
    }
}

/* Printable form of a token for messages: control and non-ASCII bytes escaped
 * as \xNN, truncated with "..." when it does not fit.  len must be > 8. */
static const char *printable(const char *s, size_t n, char *buf, size_t len)
{
    size_t o = 0, i;
    for (i = 0; i < n && o + 8 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f)
            o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    if (i < n) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

/* A buffer name; Slurm's symbols (%u, %j, ... see harmonia-directives(5)) may
 * stand in it for letters and digits: the plugin replaces them for each job and
 * checks the name it gets again. */
static bool name_rule(const char *s, bool symbols)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > HU_BB_NAME_MAX)
        return false;
    if (!isalpha((unsigned char)s[0]) && !(symbols && s[0] == '%' && s[1] && strchr("Aajux", s[1])))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (symbols && s[i] == '%' && s[i + 1] && strchr("Aajux", s[i + 1])) {
            i++;
            continue;
        }
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return false;
    }
    return true;
}

static bool valid_name(const char *s)
{
    return name_rule(s, true);
}

bool hu_bb_name_ok(const char *name)
{
    return name_rule(name, false);
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------ paths */

static const char *bb_var_rest(const char *p)
{
    if (strncmp(p, "$HARMONIA_BB", 12) == 0)
        return p + 12;
    if (strncmp(p, "${HARMONIA_BB}", 14) == 0)
        return p + 14;
    return NULL;
}

/* What breaks the path rule in p: a ".." or "." component, a newline; NULL:
 * nothing. */
static const char *path_bad_part(const char *p)
{
    const char *why = NULL;
    if (strchr(p, '\n'))
        return "a newline";
    for (const char *s = p; *s;) {
        while (*s == '/')
            s++;
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return "'..'";
        if (n == 1 && s[0] == '.')
            why = "a '.' component";
        s += n;
    }
    return why;
}

bool hu_bb_path_ok(const char *path)
{
    return path && path[0] == '/' && strlen(path) <= HU_BB_PATH_MAX && !path_bad_part(path);
}

static int check_bb_path(const char *key, const char *val, ctx_t *c, hu_error_t *err)
{
    const char *why;
    const char *rest = bb_var_rest(val);
    if (!rest)
        FAIL(err, c,
             "%s '%s' must be inside the job buffer: start it with "
             "$HARMONIA_BB/",
             key, val);
    if (*rest != '\0' && *rest != '/')
        FAIL(err, c, "%s '%s' must be $HARMONIA_BB or start with $HARMONIA_BB/", key, val);
    if ((why = path_bad_part(rest)))
        FAIL(err, c, "%s '%s' may not contain %s", key, val, why);
    return 0;
}

static int check_pfs_path(const char *key, const char *val, ctx_t *c, hu_error_t *err)
{
    const char *why;
    if (bb_var_rest(val))
        FAIL(err, c, "%s '%s' must be a file system path, not the job buffer", key, val);
    /* "%d/...": the job's working directory, an absolute path (the plugin
     * replaces it and checks the result again) */
    if (val[0] != '/' && strncmp(val, "%d/", 3) != 0 && strcmp(val, "%d") != 0)
        FAIL(err, c, "%s '%s' is a relative path: give an absolute path", key, val);
    if ((why = path_bad_part(val)))
        FAIL(err, c, "%s '%s' may not contain %s", key, val, why);
    return 0;
}

/* ------------------------------------------------------------------ one directive */

/* w_iter from microseconds, computed as parse_number() computes "<s>.<frac>s" */
static double w_iter_from_us(uint64_t us)
{
    return (double)(us / 1000000) + (double)(us % 1000000) / 1e6;
}

static int size_value(const char *key, const char *val, uint64_t *out, ctx_t *c, hu_error_t *err)
{
    hu_error_t e;
    if (hu_parse_size(val, 0, out, &e) < 0)
        FAIL(err, c, "%s: %s", key, e.text);
    if (*out == 0)
        FAIL(err, c, "%s must be greater than zero", key);
    return 0;
}

static int type_value(const char *val, hu_bb_type_t *t, ctx_t *c, hu_error_t *err)
{
    if (!val) {
        *t = HU_BB_TYPE_UNSET;
        return 0;
    }
    if (strcmp(val, "file") == 0)
        *t = HU_BB_TYPE_FILE;
    else if (strcmp(val, "directory") == 0)
        *t = HU_BB_TYPE_DIRECTORY;
    else
        FAIL(err, c, "type '%s' is not file or directory", val);
    return 0;
}

static int interpose_value(const char *val, int *out, ctx_t *c, hu_error_t *err)
{
    if (strcmp(val, "yes") == 0)
        *out = 1;
    else if (strcmp(val, "no") == 0)
        *out = -1;
    else
        FAIL(err, c, "interpose '%s' is not yes or no", val);
    return 0;
}

/* Apply one tokenised directive to 'req'. */
static int apply(hu_bb_request_t *req, int v, kv_t *kv, int nkv, int line, ctx_t *c,
                 hu_error_t *err)
{
    const char *val;
    unsigned long u;

    switch (v) {
    case V_JOBBUFFER:
        if (req->has_buffer)
            FAIL(err, c, "a second jobbuffer directive (only one per job)");
        if (size_value("capacity", kv_get(kv, nkv, "capacity"), &req->capacity, c, err) < 0)
            return -1;
        if ((val = kv_get(kv, nkv, "nodes"))) {
            if (parse_uint(val, HU_BB_MAX_NODES, &u) < 0 || u == 0)
                FAIL(err, c, "nodes '%s' is not a whole number from 1 to %d", val, HU_BB_MAX_NODES);
            req->nodes = (uint32_t)u;
        }
        if ((val = kv_get(kv, nkv, "pool"))) {
            if (!valid_name(val))
                FAIL(err, c,
                     "pool '%s' is not a valid name (a letter, then letters, "
                     "digits, '_', '-' or '.', at most %d)",
                     val, HU_BB_NAME_MAX);
            if (!(req->pool = strdup(val)))
                return -1;
        }
        req->has_buffer = true;
        return 0;
    case V_IOHINTS:
        if (req->has_hints || req->interpose_only)
            FAIL(err, c, "a second iohints directive (only one per job)");
        if (nkv == 1 && (val = kv_get(kv, nkv, "interpose"))) {
            /* the interposer asked for (or refused) with no hints: what it
             * measures, or what job_submit learned, gives them */
            if (interpose_value(val, &req->interpose, c, err) < 0)
                return -1;
            req->interpose_only = true;
            return 0;
        }
        {
            hu_error_t e;
            val = kv_get(kv, nkv, "w_iter");
            if (hu_parse_duration(val, 0, &req->w_iter, &e) < 0)
                FAIL(err, c, "w_iter: %s", e.text);
            if (!(req->w_iter > 0))
                FAIL(err, c, "w_iter must be greater than zero");
            if (!(req->w_iter <= HU_BB_MAX_W_ITER))
                FAIL(err, c,
                     "w_iter '%s' is too long (at most %.0fs, about 31 "
                     "years)",
                     val, HU_BB_MAX_W_ITER);
            /* Kept to the microsecond, so that hu_bb_format() writes it exactly
             * in a form hu_bb_parse() reads back to the same double. */
            uint64_t us = (uint64_t)(req->w_iter * 1e6 + 0.5);
            if (us == 0)
                FAIL(err, c, "w_iter '%s' is shorter than 0.000001s", val);
            req->w_iter = w_iter_from_us(us);
        }
        if (size_value("io_volume", kv_get(kv, nkv, "io_volume"), &req->io_volume, c, err) < 0)
            return -1;
        if ((val = kv_get(kv, nkv, "phases"))) {
            if (parse_uint(val, 100000000UL, &u) < 0 || u == 0)
                FAIL(err, c, "phases '%s' is not a whole number from 1 to 100000000", val);
            req->phases = (uint32_t)u;
        }
        if ((val = kv_get(kv, nkv, "io"))) {
            if (strcmp(val, "write") == 0)
                req->io = HU_BB_IO_WRITE;
            else if (strcmp(val, "read") == 0)
                req->io = HU_BB_IO_READ;
            else if (strcmp(val, "readwrite") == 0)
                req->io = HU_BB_IO_READWRITE;
            else
                FAIL(err, c, "io '%s' is not write, read or readwrite", val);
        }
        if ((val = kv_get(kv, nkv, "priority"))) {
            if (parse_uint(val, 10, &u) < 0 || u < 1)
                FAIL(err, c, "priority '%s' is not a whole number from 1 to 10", val);
            req->priority = (int)u;
        }
        if ((val = kv_get(kv, nkv, "source"))) {
            if (strcmp(val, "learned") == 0)
                req->hints_learned = true;
            else if (strcmp(val, "user") != 0)
                FAIL(err, c, "source '%s' is not user or learned", val);
        }
        if ((val = kv_get(kv, nkv, "interpose"))
            && interpose_value(val, &req->interpose, c, err) < 0)
            return -1;
        req->has_hints = true;
        return 0;
    case V_STAGE_IN:
    case V_STAGE_OUT: {
        bool in = (v == V_STAGE_IN);
        const char *src = kv_get(kv, nkv, "source");
        const char *dst = kv_get(kv, nkv, "destination");
        hu_bb_type_t t = HU_BB_TYPE_UNSET;
        if (req->nstage_in + req->nstage_out >= HU_BB_MAX_STAGE)
            FAIL(err, c, "too many stage_in/stage_out directives (at most %d)", HU_BB_MAX_STAGE);
        if (in) {
            if (check_pfs_path("source", src, c, err) < 0
                || check_bb_path("destination", dst, c, err) < 0)
                return -1;
        } else {
            if (check_bb_path("source", src, c, err) < 0
                || check_pfs_path("destination", dst, c, err) < 0)
                return -1;
        }
        if (type_value(kv_get(kv, nkv, "type"), &t, c, err) < 0)
            return -1;
        hu_bb_stage_t *s = in ? &req->stage_in[req->nstage_in] : &req->stage_out[req->nstage_out];
        if (!(s->source = strdup(src)) || !(s->destination = strdup(dst))) {
            free(s->source);
            s->source = NULL;
            return -1;
        }
        s->type = t;
        s->line = line;
        s->bb_item = c->bb_item;
        if (in)
            req->nstage_in++;
        else
            req->nstage_out++;
        return 0;
    }
    case V_CREATE:
    case V_USE:
    case V_DESTROY: {
        const char *name = kv_get(kv, nkv, "name");
        hu_bb_persist_t *p;
        if (req->npersist >= HU_BB_MAX_PERSIST)
            FAIL(err, c, "too many persistent-buffer directives (at most %d)", HU_BB_MAX_PERSIST);
        if (!valid_name(name))
            FAIL(err, c,
                 "name '%s' is not a valid buffer name (a letter, then "
                 "letters, digits, '_', '-' or '.', at most %d)",
                 name, HU_BB_NAME_MAX);
        for (int i = 0; i < req->npersist; i++) {
            if (strcmp(req->persist[i].name, name) == 0
                && req->persist[i].op == (hu_bb_persist_op_t)(v - V_CREATE))
                FAIL(err, c, "persistent buffer '%s' is named twice", name);
        }
        p = &req->persist[req->npersist];
        memset(p, 0, sizeof(*p));
        p->op = (hu_bb_persist_op_t)(v - V_CREATE);
        p->line = line;
        p->bb_item = c->bb_item;
        if (v == V_CREATE) {
            if (size_value("capacity", kv_get(kv, nkv, "capacity"), &p->capacity, c, err) < 0)
                return -1;
            if ((val = kv_get(kv, nkv, "pool"))) {
                if (!valid_name(val))
                    FAIL(err, c,
                         "pool '%s' is not a valid name (a letter, then "
                         "letters, digits, '_', '-' or '.', at most %d)",
                         val, HU_BB_NAME_MAX);
                if (!(p->pool = strdup(val)))
                    return -1;
            }
        }
        if (!(p->name = strdup(name))) {
            free(p->pool);
            return -1;
        }
        req->npersist++;
        return 0;
    }
    }
    FAIL(err, c, "internal error: verb %d", v);
}

/* Read a value starting at *pp (after '='): bare up to blank, or double-quoted. */
static int read_value(const char **pp, const char *end, char **out, const char *key, ctx_t *c,
                      hu_error_t *err)
{
    const char *p = *pp;
    char *buf = malloc((size_t)(end - p) + 1);
    size_t o = 0;

    if (!buf)
        return -1;
    if (p < end && *p == '"') {
        p++;
        while (p < end && *p != '"') {
            if (*p == '\\' && p + 1 < end && (p[1] == '"' || p[1] == '\\'))
                p++;
            buf[o++] = *p++;
        }
        if (p >= end) {
            free(buf);
            FAIL(err, c, "%s: the quoted value has no closing '\"'", key);
        }
        p++;
        if (p < end && *p != ' ' && *p != '\t') {
            free(buf);
            FAIL(err, c, "%s: unexpected text after the closing '\"'", key);
        }
    } else {
        while (p < end && *p != ' ' && *p != '\t')
            buf[o++] = *p++;
    }
    buf[o] = '\0';
    if (o == 0) {
        free(buf);
        FAIL(err, c, "%s has no value (write %s=...)", key, key);
    }
    *pp = p;
    *out = buf;
    return 0;
}

/* Parse one directive line [s, end) (prefix already removed). */
static int parse_one(hu_bb_request_t *req, const char *s, const char *end, int line, ctx_t *c,
                     hu_error_t *err)
{
    const char *p = s;
    kv_t kv[MAX_KV];
    int nkv = 0, v, rc = -1;
    char pb[80];

    memset(kv, 0, sizeof(kv));
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *vs = p;
    while (p < end && *p != ' ' && *p != '\t')
        p++;
    if (p == vs)
        FAIL(err, c,
             "empty directive (expected one of jobbuffer, iohints, stage_in, "
             "stage_out, create_persistent, use_persistent, destroy_persistent)");
    if ((v = verb_index(vs, (size_t)(p - vs))) < 0)
        FAIL(err, c,
             "unknown directive '%s' (expected one of jobbuffer, iohints, "
             "stage_in, stage_out, create_persistent, use_persistent, "
             "destroy_persistent)",
             printable(vs, (size_t)(p - vs), pb, sizeof(pb)));
    c->verb = verbs[v];

    while (1) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p >= end)
            break;
        const char *ks = p;
        while (p < end && *p != '=' && *p != ' ' && *p != '\t')
            p++;
        size_t klen = (size_t)(p - ks);
        char key[32];
        printable(ks, klen, pb, sizeof(pb));
        if (p >= end || *p != '=') {
            bool known = false;
            for (int i = 0; verb_keys[v][i]; i++) {
                const char *k = verb_keys[v][i] + (verb_keys[v][i][0] == '!');
                if (strlen(k) == klen && strncmp(k, ks, klen) == 0)
                    known = true;
            }
            if (known) {
                errno = EINVAL;
                hu_errprintf(err, "#BB_HARMONIA %s: %s: %s has no value (write %s=...)", c->where,
                             c->verb, pb, pb);
            } else {
                errno = EINVAL;
                hu_errprintf(err, "#BB_HARMONIA %s: %s: '%s' is not key=value", c->where, c->verb,
                             pb);
            }
            goto out;
        }
        int found = 0;
        for (int i = 0; verb_keys[v][i]; i++) {
            const char *k = verb_keys[v][i] + (verb_keys[v][i][0] == '!');
            if (strlen(k) == klen && strncmp(k, ks, klen) == 0)
                found = 1;
        }
        if (!found) {
            char keys[128];
            list_keys(v, keys, sizeof(keys));
            errno = EINVAL;
            hu_errprintf(err, "#BB_HARMONIA %s: %s: unknown key '%s' (%s takes %s)", c->where,
                         c->verb, pb, c->verb, keys);
            goto out;
        }
        memcpy(key, ks, klen);
        key[klen] = '\0';
        if (kv_get(kv, nkv, key)) {
            errno = EINVAL;
            hu_errprintf(err, "#BB_HARMONIA %s: %s: %s is given twice", c->where, c->verb, key);
            goto out;
        }
        p++; /* '=' */
        if (nkv >= MAX_KV)
            goto out;
        strcpy(kv[nkv].key, key);
        if (read_value(&p, end, &kv[nkv].val, key, c, err) < 0)
            goto out;
        nkv++;
    }
    /* "iohints interpose=yes|no" alone needs no hints (apply()) */
    bool interpose_only = v == V_IOHINTS && nkv == 1 && kv_get(kv, nkv, "interpose");
    for (int i = 0; verb_keys[v][i] && !interpose_only; i++) {
        const char *k = verb_keys[v][i];
        if (k[0] == '!' && !kv_get(kv, nkv, k + 1)) {
            errno = EINVAL;
            hu_errprintf(err, "#BB_HARMONIA %s: %s: %s is missing (write %s=...)", c->where,
                         c->verb, k + 1, k + 1);
            goto out;
        }
    }
    rc = apply(req, v, kv, nkv, line, c, err);
out:
    kv_clear(kv, nkv);
    return rc;
}

/* ------------------------------------------------------------------ public */

static bool starts_with_prefix(const char *p, const char *end)
{
    size_t n = strlen(HU_BB_PREFIX);
    return (size_t)(end - p) >= n && memcmp(p, HU_BB_PREFIX, n) == 0
           && ((size_t)(end - p) == n || p[n] == ' ' || p[n] == '\t');
}

char *hu_bb_collect_script(const char *script)
{
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    const char *p = script;
    int lineno = 0;

    if (!out)
        return NULL;
    out[0] = '\0';
    if (!script)
        return out;
    while (*p) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *q = p;
        if (lineno < 99999999) /* hu_bb_parse() reads at most 8 digits */
            lineno++;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (lineno == 1 && end - q >= 2 && q[0] == '#' && q[1] == '!') {
            /* interpreter line */
        } else if (q == end) {
            /* blank */
        } else if (*q != '#') {
            break; /* first command: directives end here, as for #SBATCH */
        } else if (starts_with_prefix(q, end)) {
            const char *e = end;
            while (e > q && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
                e--;
            size_t need = (size_t)(e - q) + 32;
            if (len + need + 1 > cap) {
                while (len + need + 1 > cap)
                    cap *= 2;
                char *n = realloc(out, cap);
                if (!n) {
                    free(out);
                    return NULL;
                }
                out = n;
            }
            len += (size_t)sprintf(out + len, "@%d ", lineno);
            memcpy(out + len, q, (size_t)(e - q));
            len += (size_t)(e - q);
            out[len++] = '\n';
            out[len] = '\0';
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    return out;
}

/* One token of a DataWarp line, as its #BB_HARMONIA equivalent: key=value with
 * $DW_JOB_STRIPED and $DW_JOB_PRIVATE written $HARMONIA_BB; false to drop it. */
static bool dw_token(const char *verb, const char *t, size_t n, char *out, size_t *len, size_t cap)
{
    static const char *const dw_vars[] = { "$DW_JOB_STRIPED", "$DW_JOB_PRIVATE",
                                           "${DW_JOB_STRIPED}", "${DW_JOB_PRIVATE}" };
    bool jobdw = strcmp(verb, "jobdw") == 0, create = strcmp(verb, "create_persistent") == 0;

    if ((jobdw || create) && (n < 9 || strncmp(t, "capacity=", 9) != 0)
        && !(create && n > 5 && strncmp(t, "name=", 5) == 0)
        && !(create && n > 5 && strncmp(t, "pool=", 5) == 0))
        return false; /* type=, access_mode=: no equivalent, not needed */
    if (strcmp(verb, "persistentdw") == 0 && (n < 5 || strncmp(t, "name=", 5) != 0))
        return false;
    if (*len + 1 < cap)
        out[(*len)++] = ' ';
    for (size_t i = 0; i < n && *len + 1 < cap;) {
        size_t k, m = 0;
        for (k = 0; k < sizeof(dw_vars) / sizeof(dw_vars[0]); k++) {
            m = strlen(dw_vars[k]);
            if (n - i >= m && strncmp(t + i, dw_vars[k], m) == 0)
                break;
        }
        if (k < sizeof(dw_vars) / sizeof(dw_vars[0])) {
            for (const char *h = "$HARMONIA_BB"; *h && *len + 1 < cap; h++)
                out[(*len)++] = *h;
            i += m;
        } else {
            out[(*len)++] = t[i++];
        }
    }
    if (*len < cap)
        out[*len] = '\0';
    return true;
}

/* A DataWarp line [q, end) ("#DW verb ..." or "#BB verb ..."): -1 when it is not
 * one, else its verb in verb[] and 1 with its #BB_HARMONIA equivalent in sugg[],
 * or 0 when it has none. */
static int dw_line(const char *q, const char *end, char *verb, size_t vlen, char *sugg, size_t slen)
{
    static const struct {
        const char *dw, *ours, *fallback;
    } verbs[] = {
        { "jobdw", "jobbuffer", " capacity=SIZE" },
        { "persistentdw", "use_persistent", " name=NAME" },
        { "stage_in", "stage_in", " source=PATH destination=$HARMONIA_BB/NAME" },
        { "stage_out", "stage_out", " source=$HARMONIA_BB/NAME destination=PATH" },
        { "create_persistent", "create_persistent", " name=NAME capacity=SIZE" },
        { "destroy_persistent", "destroy_persistent", " name=NAME" },
    };
    const char *v = q + 4, *ve;
    size_t len, i;
    bool any = false;

    if (end - q <= 4 || (strncmp(q, "#DW", 3) != 0 && strncmp(q, "#BB", 3) != 0)
        || (q[3] != ' ' && q[3] != '\t'))
        return -1;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    for (ve = v; ve < end && *ve != ' ' && *ve != '\t' && *ve != '\r'; ve++)
        ;
    snprintf(verb, vlen, "%.*s", (int)(ve - v), v);
    for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strcmp(verb, verbs[i].dw) == 0)
            break;
    if (i == sizeof(verbs) / sizeof(verbs[0]))
        return 0;
    len = (size_t)snprintf(sugg, slen, "#BB_HARMONIA %s", verbs[i].ours);
    if (len >= slen)
        len = slen - 1; /* cut: dw_token() and the fallback append nothing */
    for (const char *t = ve; t < end;) {
        const char *te;
        while (t < end && (*t == ' ' || *t == '\t' || *t == '\r'))
            t++;
        for (te = t; te < end && *te != ' ' && *te != '\t' && *te != '\r'; te++)
            ;
        if (te > t && dw_token(verb, t, (size_t)(te - t), sugg, &len, slen))
            any = true;
        t = te;
    }
    if (!any && len + 1 < slen)
        snprintf(sugg + len, slen - len, "%s", verbs[i].fallback);
    return 1;
}

int hu_bb_dw_equivalent(const char *text, size_t n, char *out, size_t outlen)
{
    const char *q = text, *end = text + n;
    char verb[32];

    while (q < end && (*q == ' ' || *q == '\t'))
        q++;
    return dw_line(q, end, verb, sizeof(verb), out, outlen);
}

int hu_bb_check_foreign(const char *script, hu_error_t *err)
{
    const char *p = script;
    int lineno = 0;

    while (p && *p) {
        const char *eol = strchr(p, '\n');
        const char *end = eol ? eol : p + strlen(p);
        const char *q = p;
        char verb[32], sugg[256];
        int r;
        if (lineno < 99999999)
            lineno++;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q < end && *q != '#')
            break; /* first command: directives end here */
        r = dw_line(q, end, verb, sizeof(verb), sugg, sizeof(sugg));
        if (r == 0) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "#BB_HARMONIA line %d: '%.3s %s' is a directive of "
                                "another burst buffer plugin (DataWarp), which "
                                "burst_buffer/harmonia does not read and has no "
                                "equivalent of: remove it (see harmonia-directives(5))",
                                lineno, q, verb);
        }
        if (r > 0) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "#BB_HARMONIA line %d: '%.3s %s' is DataWarp's syntax, "
                                "which burst_buffer/harmonia does not read (the job would "
                                "run without it): write '%s' instead (see "
                                "harmonia-directives(5))",
                                lineno, q, verb, sugg);
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    return 0;
}

bool hu_bb_has_directives(const char *text, bool bare_ok)
{
    if (!text)
        return false;
    if (strstr(text, HU_BB_PREFIX))
        return true;
    if (!bare_ok)
        return false;
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ';' || *p == '\n' || *p == '\r')
            p++;
        const char *s = p;
        while (*p && !strchr(" \t;\n\r", *p))
            p++;
        if (p > s && verb_index(s, (size_t)(p - s)) >= 0)
            return true;
        while (*p && *p != ';' && *p != '\n')
            p++;
    }
    return false;
}

/* End of one --bb item: the next newline, or the next ';' that is not inside a
 * double-quoted value.  Tokens are scanned as parse_one() and read_value() do: a
 * value is quoted when its first character, just after "key=", is '"'. */
static const char *bb_item_end(const char *p, const char *end)
{
    enum { BLANK, KEY, VALSTART, VALUE, QUOTED } st = BLANK;

    for (; p < end && *p != '\n'; p++) {
        char ch = *p;
        if (st == QUOTED) {
            if (ch == '\\' && p + 1 < end && (p[1] == '"' || p[1] == '\\'))
                p++;
            else if (ch == '"')
                st = VALUE;
            continue;
        }
        if (ch == ';')
            break;
        if (ch == ' ' || ch == '\t')
            st = BLANK;
        else if (st == VALSTART && ch == '"')
            st = QUOTED;
        else if ((st == BLANK || st == KEY) && ch == '=')
            st = VALSTART;
        else if (st == BLANK)
            st = KEY;
        else if (st == VALSTART)
            st = VALUE;
    }
    return p;
}

/*
 * The canonical form of a request is stored by the plugins and parsed again, so
 * its lines must fit the line limit too.  Normalising can lengthen a directive a
 * little (the prefix a --bb item may omit, the io and priority defaults, exact
 * size units), so a directive just under the limit as written can be over it
 * once normalised: refuse it here rather than store text that does not parse.
 */
static int check_canonical_length(const hu_bb_request_t *r, hu_error_t *err)
{
    hu_bb_request_t tmp = *r; /* shallow: hu_bb_format() only reads */
    char *canon, *line, *nl;
    int rc = 0;

    if (tmp.has_hints) {
        if (tmp.io == HU_BB_IO_UNSET)
            tmp.io = HU_BB_IO_WRITE;
        if (tmp.priority == 0)
            tmp.priority = 1;
    }
    if (!(canon = hu_bb_format(&tmp)))
        return hu_errprintf(err, "#BB_HARMONIA: out of memory");
    for (line = canon; *line; line = nl + 1) {
        if (!(nl = strchr(line, '\n')))
            break;
        size_t n = (size_t)(nl - line);
        if (n > HU_BB_MAX_LINE) {
            const char *verb = line + strlen(HU_BB_PREFIX) + 1;
            errno = EINVAL;
            rc = hu_errprintf(err,
                              "#BB_HARMONIA: %.*s: the directive is %zu bytes "
                              "long once normalised (at most %d)",
                              (int)strcspn(verb, " "), verb, n, HU_BB_MAX_LINE);
            break;
        }
    }
    free(canon);
    return rc;
}

int hu_bb_parse(hu_bb_request_t *req, const char *text, size_t len, hu_bb_source_t src,
                hu_error_t *err)
{
    hu_bb_request_t work;
    const char *p = text, *end;
    int item = 0;
    char where[48];
    ctx_t c = { .where = where, .verb = NULL, .bb_item = src == HU_BB_SRC_BB_OPTION };

    if (!req || (!text && len)) {
        errno = EINVAL;
        return hu_errprintf(err, "invalid arguments");
    }
    if (len == 0)
        return 0;
    end = text + len;
    /* Work on a copy: on failure, 'req' is left as it was.  Strings added during
     * this call are freed on failure; strings already in req are shared and never
     * freed here. */
    work = *req;
    if (memchr(text, '\0', len)) {
        size_t at = (size_t)((const char *)memchr(text, '\0', len) - text);
        errno = EINVAL;
        return hu_errprintf(err,
                            "#BB_HARMONIA: the directives contain a NUL byte "
                            "(at byte %zu)",
                            at);
    }
    while (p < end) {
        const char *eol = p;
        int line;
        if (src == HU_BB_SRC_BB_OPTION)
            eol = bb_item_end(p, end);
        else
            while (eol < end && *eol != '\n')
                eol++;
        const char *s = p, *e = eol;
        p = (eol < end) ? eol + 1 : end;
        item++;
        line = item;
        /* "@N " marks from hu_bb_collect_script() carry the script's line number */
        if (e - s > 1 && *s == '@' && isdigit((unsigned char)s[1])) {
            line = 0;
            s++;
            while (s < e && isdigit((unsigned char)*s) && line < 100000000)
                line = line * 10 + (*s++ - '0');
            if (s < e && *s == ' ')
                s++;
        }
        while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        switch (src) {
        case HU_BB_SRC_SCRIPT:
            snprintf(where, sizeof(where), "line %d", line);
            break;
        case HU_BB_SRC_BB_OPTION:
            snprintf(where, sizeof(where), "--bb item %d", line);
            break;
        default:
            snprintf(where, sizeof(where), "directive %d", line);
            break;
        }
        c.verb = NULL;
        if (s == e)
            continue;
        const char *ds = s; /* the directive, prefix included */
        if (starts_with_prefix(s, e)) {
            s += strlen(HU_BB_PREFIX);
        } else if (src != HU_BB_SRC_BB_OPTION) {
            /* only --bb may omit the prefix; any other line is not ours */
            continue;
        } else if (*s == '#') {
            continue; /* another plugin's directive (#DW, #BB_LUA) */
        }
        /* (other plugins' lines are not ours to limit) */
        if ((size_t)(e - ds) > HU_BB_MAX_LINE) {
            errno = EINVAL;
            hu_errprintf(err,
                         "#BB_HARMONIA %s: the directive is %zu bytes long "
                         "(at most %d)",
                         where, (size_t)(e - ds), HU_BB_MAX_LINE);
            goto fail;
        }
        for (const char *q = s; q < e; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch < 0x20 && ch != '\t') {
                errno = EINVAL;
                hu_errprintf(err,
                             "#BB_HARMONIA %s: control character 0x%02x in the "
                             "directive",
                             where, ch);
                goto fail;
            }
        }
        if (parse_one(&work, s, e, line, &c, err) < 0)
            goto fail;
    }
    if (check_canonical_length(&work, err) < 0)
        goto fail;
    *req = work;
    return 0;
fail:
    /* free what this call added */
    for (int i = req->nstage_in; i < work.nstage_in; i++) {
        free(work.stage_in[i].source);
        free(work.stage_in[i].destination);
    }
    for (int i = req->nstage_out; i < work.nstage_out; i++) {
        free(work.stage_out[i].source);
        free(work.stage_out[i].destination);
    }
    for (int i = req->npersist; i < work.npersist; i++) {
        free(work.persist[i].name);
        free(work.persist[i].pool);
    }
    if (work.pool != req->pool)
        free(work.pool);
    errno = EINVAL;
    return -1;
}

int hu_bb_validate(hu_bb_request_t *req, hu_error_t *err)
{
    bool uses = false;
    for (int i = 0; i < req->npersist; i++)
        if (req->persist[i].op == HU_BB_PERSIST_USE)
            uses = true;
    if ((req->nstage_in || req->nstage_out) && !req->has_buffer && !uses) {
        const hu_bb_stage_t *s = req->nstage_in ? &req->stage_in[0] : &req->stage_out[0];
        char w[48];
        errno = EINVAL;
        return hu_errprintf(err,
                            "#BB_HARMONIA %s: %s needs a buffer: add a "
                            "jobbuffer or use_persistent directive",
                            hu_bb_where(s->line, s->bb_item, w, sizeof(w)),
                            req->nstage_in ? "stage_in" : "stage_out");
    }
    if (req->has_hints && req->has_buffer && req->io_volume > req->capacity) {
        char a[32], b[32];
        errno = EINVAL;
        return hu_errprintf(err,
                            "#BB_HARMONIA: iohints: io_volume %s is larger than "
                            "the jobbuffer capacity %s: one I/O phase must fit in "
                            "the buffer",
                            hu_bb_size_str(req->io_volume, a, sizeof(a)),
                            hu_bb_size_str(req->capacity, b, sizeof(b)));
    }
    for (int i = 0; i < req->npersist; i++) {
        for (int j = 0; j < req->npersist; j++) {
            if (i != j && req->persist[i].op == HU_BB_PERSIST_CREATE
                && req->persist[j].op == HU_BB_PERSIST_DESTROY
                && strcmp(req->persist[i].name, req->persist[j].name) == 0) {
                char w[48];
                errno = EINVAL;
                return hu_errprintf(
                    err,
                    "#BB_HARMONIA %s: persistent buffer "
                    "'%s' is both created and destroyed by the job",
                    hu_bb_where(req->persist[j].line, req->persist[j].bb_item, w, sizeof(w)),
                    req->persist[j].name);
            }
        }
    }
    if (req->has_hints) {
        if (req->io == HU_BB_IO_UNSET)
            req->io = HU_BB_IO_WRITE;
        if (req->priority == 0)
            req->priority = 1;
    }
    return 0;
}

const char *hu_bb_where(int line, bool bb_item, char *buf, size_t len)
{
    snprintf(buf, len, "%s %d", bb_item ? "--bb item" : "line", line);
    return buf;
}

int hu_bb_check_paths(const hu_bb_request_t *req, hu_error_t *err)
{
    struct stat st;
    char w[48];

    for (int i = 0; i < req->nstage_in; i++) {
        const hu_bb_stage_t *s = &req->stage_in[i];
        if (stat(s->source, &st) < 0)
            return hu_errprintf(err,
                                "#BB_HARMONIA %s: stage_in: source '%s' "
                                "does not exist (%s)",
                                hu_bb_where(s->line, s->bb_item, w, sizeof(w)), s->source,
                                strerror(errno));
        if (s->type == HU_BB_TYPE_FILE && !S_ISREG(st.st_mode)) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "#BB_HARMONIA %s: stage_in: source '%s' is "
                                "not a regular file (type=file)",
                                hu_bb_where(s->line, s->bb_item, w, sizeof(w)), s->source);
        }
        if (s->type == HU_BB_TYPE_DIRECTORY && !S_ISDIR(st.st_mode)) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "#BB_HARMONIA %s: stage_in: source '%s' is "
                                "not a directory (type=directory)",
                                hu_bb_where(s->line, s->bb_item, w, sizeof(w)), s->source);
        }
    }
    for (int i = 0; i < req->nstage_out; i++) {
        const hu_bb_stage_t *s = &req->stage_out[i];
        char *parent = strdup(s->destination);
        char *slash;
        int rc;
        if (!parent)
            return -1;
        /* "/pfs/out/" names the directory out: its parent is /pfs */
        for (size_t n = strlen(parent); n > 1 && parent[n - 1] == '/'; n--)
            parent[n - 1] = '\0';
        slash = strrchr(parent, '/');
        if (slash == parent)
            slash[1] = '\0';
        else if (slash)
            *slash = '\0';
        rc = stat(parent, &st);
        if (rc < 0 || !S_ISDIR(st.st_mode)) {
            hu_errprintf(err,
                         "#BB_HARMONIA %s: stage_out: the directory of "
                         "destination '%s' does not exist",
                         hu_bb_where(s->line, s->bb_item, w, sizeof(w)), s->destination);
            free(parent);
            errno = ENOENT;
            return -1;
        }
        free(parent);
    }
    return 0;
}

const char *hu_bb_size_str(uint64_t bytes, char *buf, size_t len)
{
    return hu_size_str_exact(bytes, buf, len);
}

const char *hu_bb_io_str(hu_bb_io_t io)
{
    switch (io) {
    case HU_BB_IO_WRITE:
        return "write";
    case HU_BB_IO_READ:
        return "read";
    case HU_BB_IO_READWRITE:
        return "readwrite";
    default:
        return "unset";
    }
}

const char *hu_bb_type_str(hu_bb_type_t t)
{
    switch (t) {
    case HU_BB_TYPE_FILE:
        return "file";
    case HU_BB_TYPE_DIRECTORY:
        return "directory";
    default:
        return "unset";
    }
}

/* Value for output: quoted when it holds blanks, quotes, backslashes or ';' (the
 * canonical text is read again as --bb text, where ';' separates directives). */
static int put_value(char **buf, size_t *len, size_t *cap, const char *v);

static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    while (1) {
        va_start(ap, fmt);
        n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < *cap - *len)
            break;
        size_t ncap = *cap * 2 + (size_t)n;
        char *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
    *len += (size_t)n;
    return 0;
}

static int put_value(char **buf, size_t *len, size_t *cap, const char *v)
{
    if (!strpbrk(v, " \t\"\\;"))
        return appendf(buf, len, cap, "%s", v);
    if (appendf(buf, len, cap, "\"") < 0)
        return -1;
    for (const char *p = v; *p; p++) {
        if ((*p == '"' || *p == '\\') && appendf(buf, len, cap, "\\") < 0)
            return -1;
        if (appendf(buf, len, cap, "%c", *p) < 0)
            return -1;
    }
    return appendf(buf, len, cap, "\"");
}

char *hu_bb_format(const hu_bb_request_t *req)
{
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    char sz[32];

    if (!buf)
        return NULL;
    buf[0] = '\0';
#define AP(...) \
    do { \
        if (appendf(&buf, &len, &cap, __VA_ARGS__) < 0) \
            goto error; \
    } while (0)
#define PV(v) \
    do { \
        if (put_value(&buf, &len, &cap, (v)) < 0) \
            goto error; \
    } while (0)
    if (req->has_buffer) {
        AP("%s jobbuffer capacity=%s", HU_BB_PREFIX, hu_bb_size_str(req->capacity, sz, sizeof(sz)));
        if (req->nodes)
            AP(" nodes=%u", req->nodes);
        if (req->pool)
            AP(" pool=%s", req->pool);
        AP("\n");
    }
    if (req->has_hints) {
        /* interpose first: the line of a request as the user wrote it stays a
         * prefix of its normalised line (io= and priority= are added after
         * io_volume), which is how the plugin finds the script's directives in
         * the job's canonical text (bbh_script_merged) */
        const char *ip = req->interpose > 0   ? " interpose=yes"
                         : req->interpose < 0 ? " interpose=no"
                                              : "";
        if (req->w_iter > 0 && req->w_iter <= HU_BB_MAX_W_ITER) {
            /* microseconds, written exactly (see apply()): "600s", "0.25s" */
            uint64_t us = (uint64_t)(req->w_iter * 1e6 + 0.5);
            char frac[8] = "";
            if (us % 1000000) {
                snprintf(frac, sizeof(frac), ".%06u", (unsigned)(us % 1000000));
                for (size_t n = strlen(frac); frac[n - 1] == '0'; n--)
                    frac[n - 1] = '\0';
            }
            AP("%s iohints%s w_iter=%llu%ss", HU_BB_PREFIX, ip, (unsigned long long)(us / 1000000),
               frac);
        } else {
            AP("%s iohints%s w_iter=%.17gs", HU_BB_PREFIX, ip, req->w_iter);
        }
        AP(" io_volume=%s", hu_bb_size_str(req->io_volume, sz, sizeof(sz)));
        if (req->phases)
            AP(" phases=%u", req->phases);
        if (req->io != HU_BB_IO_UNSET)
            AP(" io=%s", hu_bb_io_str(req->io));
        if (req->priority)
            AP(" priority=%d", req->priority);
        if (req->hints_learned)
            AP(" source=learned");
        AP("\n");
    } else if (req->interpose) {
        AP("%s iohints interpose=%s\n", HU_BB_PREFIX, req->interpose > 0 ? "yes" : "no");
    }
    for (int i = 0; i < req->npersist; i++) {
        const hu_bb_persist_t *p = &req->persist[i];
        if (p->op != HU_BB_PERSIST_CREATE)
            continue;
        AP("%s create_persistent name=%s capacity=%s", HU_BB_PREFIX, p->name,
           hu_bb_size_str(p->capacity, sz, sizeof(sz)));
        if (p->pool)
            AP(" pool=%s", p->pool);
        AP("\n");
    }
    for (int i = 0; i < req->npersist; i++) {
        const hu_bb_persist_t *p = &req->persist[i];
        if (p->op == HU_BB_PERSIST_USE)
            AP("%s use_persistent name=%s\n", HU_BB_PREFIX, p->name);
    }
    for (int k = 0; k < 2; k++) {
        int n = k ? req->nstage_out : req->nstage_in;
        const hu_bb_stage_t *st = k ? req->stage_out : req->stage_in;
        for (int i = 0; i < n; i++) {
            AP("%s %s source=", HU_BB_PREFIX, k ? "stage_out" : "stage_in");
            PV(st[i].source);
            AP(" destination=");
            PV(st[i].destination);
            if (st[i].type != HU_BB_TYPE_UNSET)
                AP(" type=%s", hu_bb_type_str(st[i].type));
            AP("\n");
        }
    }
    for (int i = 0; i < req->npersist; i++) {
        const hu_bb_persist_t *p = &req->persist[i];
        if (p->op == HU_BB_PERSIST_DESTROY)
            AP("%s destroy_persistent name=%s\n", HU_BB_PREFIX, p->name);
    }
#undef AP
#undef PV
    return buf;
error:
    free(buf);
    errno = ENOMEM;
    return NULL;
}

void hu_bb_request_free(hu_bb_request_t *req)
{
    int saved = errno;

    if (!req)
        return;
    free(req->pool);
    for (int i = 0; i < req->nstage_in; i++) {
        free(req->stage_in[i].source);
        free(req->stage_in[i].destination);
    }
    for (int i = 0; i < req->nstage_out; i++) {
        free(req->stage_out[i].source);
        free(req->stage_out[i].destination);
    }
    for (int i = 0; i < req->npersist; i++) {
        free(req->persist[i].name);
        free(req->persist[i].pool);
    }
    memset(req, 0, sizeof(*req));
    errno = saved;
}
