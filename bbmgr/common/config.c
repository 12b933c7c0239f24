/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.c — bbmgr.yaml parser, checks and documentation, all from the key table
 * of config.h.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pwd.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhutil/hu_error.h"
#include "libhutil/hu_yaml.h"
#include "config.h"

const hu_hostlist_opts_t cfg_hostlist_opts = {
    .max_names = 65536, /* refuses "n[0-999999999]" */
    .max_name_len = 255,
    .max_bound = 999999999,
    .flags = HU_HOSTLIST_STRICT,
};

/* ------------------------------------------------------------------ checks
 * Each check receives a pointer to the parsed field. */
typedef int (*cfg_check_f)(const void *val, hu_error_t *err);

static int chk_port(const void *v, hu_error_t *err)
{
    long p = *(const long *)v;
    if (p < 0 || p > 65535)
        return hu_errprintf(err, "port must be in 0..65535, not %ld", p);
    return 0;
}

static int chk_positive_int(const void *v, hu_error_t *err)
{
    if (*(const long *)v <= 0)
        return hu_errprintf(err, "must be a positive integer");
    return 0;
}

static int chk_nonneg_int(const void *v, hu_error_t *err)
{
    if (*(const long *)v < 0)
        return hu_errprintf(err, "must be 0 or a positive integer");
    return 0;
}

static int chk_threads(const void *v, hu_error_t *err)
{
    long n = *(const long *)v;
    if (n < 1 || n > 64)
        return hu_errprintf(err, "must be in 1..64");
    return 0;
}

static int chk_positive(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d > 0) || !isfinite(d))
        return hu_errprintf(err, "must be positive");
    return 0;
}

static int chk_agent_interval(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d >= 0.05) || d > 1)
        return hu_errprintf(err, "must be between 50ms and 1s (status at least once a second)");
    return 0;
}

/* 0 (sessions off) up to one day: a session outliving that is no longer a session. */
static int chk_session_ttl(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d >= 0) || d > 86400)
        return hu_errprintf(err, "must be between 0 (no sessions) and 1d");
    return 0;
}

static int chk_positive_size(const void *v, hu_error_t *err)
{
    if (*(const uint64_t *)v == 0)
        return hu_errprintf(err, "must not be zero");
    return 0;
}

static int chk_body(const void *v, hu_error_t *err)
{
    uint64_t n = *(const uint64_t *)v;
    if (n < 1024 || n > 64 * 1024 * 1024)
        return hu_errprintf(err, "must be between 1KiB and 64MiB");
    return 0;
}

static int chk_decision_budget(const void *v, hu_error_t *err)
{
    if (*(const long *)v < 1000)
        return hu_errprintf(err, "must be at least 1000 (work units; the default is 2000000)");
    return 0;
}

static int chk_starve_factor(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d >= 0) || !isfinite(d))
        return hu_errprintf(err, "must be 0 (off) or positive");
    return 0;
}

static int chk_overprovision(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d >= 1.0) || d > 16)
        return hu_errprintf(err, "must be between 1 and 16");
    return 0;
}

static int chk_path(const void *v, hu_error_t *err)
{
    const char *s = *(char *const *)v;
    if (!s || s[0] != '/')
        return hu_errprintf(err, "must be an absolute path");
    if (strlen(s) > 1000)
        return hu_errprintf(err, "path too long");
    return 0;
}

static int chk_path_or_empty(const void *v, hu_error_t *err)
{
    const char *s = *(char *const *)v;
    if (!s || !*s)
        return 0;
    return chk_path(v, err);
}

bool cfg_is_loopback(const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (!addr)
        return false;
    if (!strcmp(addr, "localhost"))
        return true;
    if (inet_pton(AF_INET, addr, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, addr, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

static int chk_address(const void *v, hu_error_t *err)
{
    const char *s = *(char *const *)v;
    struct in_addr a4;
    struct in6_addr a6;
    if (!*s || !strcmp(s, "localhost") || inet_pton(AF_INET, s, &a4) == 1
        || inet_pton(AF_INET6, s, &a6) == 1)
        return 0;
    return hu_errprintf(err, "'%s' is not an IPv4/IPv6 address or localhost", s);
}

static int chk_oneof(const char *s, const char *const *vals, hu_error_t *err)
{
    char buf[200] = "";
    for (int i = 0; vals[i]; i++) {
        if (!strcmp(s, vals[i]))
            return 0;
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? ", " : "", vals[i]);
    }
    return hu_errprintf(err, "'%s' is not one of %s", s, buf);
}

static int chk_auth_type(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "munge", "none", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_log_level(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "error", "warning", "info", "debug", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_log_format(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "text", "json", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_stage_mode(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "mover", "scheduled", "immediate", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_capacity_over(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "refuse", "hold", "log", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_capacity_enforce(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "auto", "btrfs", "project", "none", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_verify(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "checksum", "size", "none", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_checksum(const void *v, hu_error_t *err)
{
    static const char *const vals[] = { "xxh64", "crc32c", NULL };
    return chk_oneof(*(char *const *)v, vals, err);
}

static int chk_chunk(const void *v, hu_error_t *err)
{
    uint64_t n = *(const uint64_t *)v;
    if (n < 4096 || n > 256 * 1024 * 1024)
        return hu_errprintf(err, "must be between 4KiB and 256MiB");
    return 0;
}

static int chk_depth(const void *v, hu_error_t *err)
{
    long n = *(const long *)v;
    if (n < 1 || n > 65536)
        return hu_errprintf(err, "must be in 1..65536");
    return 0;
}

static int chk_rate(const void *v, hu_error_t *err)
{
    double d = *(const double *)v;
    if (!(d >= 0) || !isfinite(d))
        return hu_errprintf(err, "must be 0 (no cap) or positive");
    return 0;
}

static int chk_policy(const void *v, hu_error_t *err)
{
    hs_policy_t pol;
    hu_error_t herr = { "" };
    if (hs_policy_parse(*(char *const *)v, &pol, &herr) < 0)
        return hu_errprintf(err, "%s", herr.text[0] ? herr.text : "unknown policy");
    return 0;
}

static int chk_name(const void *v, hu_error_t *err)
{
    const char *s = *(char *const *)v;
    if (!*s || strlen(s) > 63)
        return hu_errprintf(err, "a name has 1 to 63 characters");
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return hu_errprintf(err, "'%s': a name has only letters, digits, '-', '_', '.'", s);
    return 0;
}

static int chk_user(const void *v, hu_error_t *err)
{
    const char *s = *(char *const *)v;
    char *end;
    if (!*s)
        return hu_errprintf(err, "must name a user or uid");
    errno = 0;
    unsigned long u = strtoul(s, &end, 10);
    if (*end == '\0' && !errno && u < (uid_t)-1)
        return 0;
    if (!getpwnam(s))
        return hu_errprintf(err, "no such user '%s'", s);
    return 0;
}

static int chk_msca(const void *v, hu_error_t *err)
{
    const cfg_doubles_t *d = v;
    if (d->n < 1 || d->n > 16)
        return hu_errprintf(err, "needs 1 to 16 values (c = 1..16), not %d", d->n);
    if (d->v[0] != 0)
        return hu_errprintf(err, "MSCA(1) must be 0");
    for (int i = 0; i < d->n; i++)
        if (!(d->v[i] >= 0) || !isfinite(d->v[i]))
            return hu_errprintf(err, "value %d must be >= 0", i + 1);
    return 0;
}

/* ------------------------------------------------------------------ table */
typedef enum {
#define S(name, islist, st, arr, cnt, help) SEC_##name,
    BBMGR_CONFIG_SECTIONS(S)
#undef S
        SEC__COUNT
} cfg_section_t;

typedef struct {
    const char *name;
    bool is_list;
    size_t item_size;
    size_t arr_off, cnt_off;
    const char *help;
} cfg_section_desc_t;

#define SEC_ARR_OFF(arr) SEC_ARR_OFF_##arr
#define SEC_ARR_OFF__ 0
#define SEC_ARR_OFF_nodes offsetof(cfg_t, nodes)
#define SEC_ARR_OFF_devices offsetof(cfg_t, devices)
#define SEC_ARR_OFF_pools offsetof(cfg_t, pools)
#define SEC_CNT_OFF(cnt) SEC_CNT_OFF_##cnt
#define SEC_CNT_OFF__ 0
#define SEC_CNT_OFF_nnodes offsetof(cfg_t, nnodes)
#define SEC_CNT_OFF_ndevices offsetof(cfg_t, ndevices)
#define SEC_CNT_OFF_npools offsetof(cfg_t, npools)

static const cfg_section_desc_t sections[] = {
#define S(name, islist, st, arr, cnt, help) \
    { #name, islist, sizeof(st), SEC_ARR_OFF(arr), SEC_CNT_OFF(cnt), help },
    BBMGR_CONFIG_SECTIONS(S)
#undef S
};

typedef struct {
    cfg_section_t section;
    const char *key;
    cfg_type_t type;
    size_t offset;
    const char *dflt;
    cfg_check_f check;
    bool live;
    const char *help;
} cfg_key_t;

static const cfg_key_t keys[] = {
#define X(sec, st, field, key, type, dflt, check, live, help) \
    { SEC_##sec, key, type, offsetof(st, field), dflt, check, live, help },
#include "config_keys.def"
#undef X
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *type_name(cfg_type_t t)
{
    switch (t) {
    case CFG_STRING:
        return "string";
    case CFG_BOOL:
        return "bool";
    case CFG_INT:
        return "integer";
    case CFG_DOUBLE:
        return "number";
    case CFG_SIZE:
        return "size";
    case CFG_BANDWIDTH:
        return "bandwidth";
    case CFG_DURATION:
        return "duration";
    case CFG_HOSTLIST:
        return "hostlist";
    case CFG_DOUBLES:
        return "numbers";
    }
    return "?";
}

/* ------------------------------------------------------------------ values */
static void free_value(const cfg_key_t *k, void *base)
{
    void *f = (char *)base + k->offset;
    switch (k->type) {
    case CFG_STRING:
        free(*(char **)f);
        *(char **)f = NULL;
        break;
    case CFG_HOSTLIST: {
        cfg_names_t *n = f;
        free(n->text);
        hu_hostlist_free(n->v, n->n);
        memset(n, 0, sizeof(*n));
        break;
    }
    case CFG_DOUBLES: {
        cfg_doubles_t *d = f;
        free(d->v);
        memset(d, 0, sizeof(*d));
        break;
    }
    default:
        break;
    }
}

static int parse_bool(const char *s, bool *b)
{
    static const char *const t[] = { "true", "yes", "on", NULL };
    static const char *const f[] = { "false", "no", "off", NULL };
    for (int i = 0; t[i]; i++)
        if (!strcasecmp(s, t[i])) {
            *b = true;
            return 0;
        }
    for (int i = 0; f[i]; i++)
        if (!strcasecmp(s, f[i])) {
            *b = false;
            return 0;
        }
    return -1;
}

static int parse_double(const char *s, double *d)
{
    char *end;
    if (!*s)
        return -1;
    errno = 0;
    *d = strtod(s, &end);
    if (errno || *end || !isfinite(*d))
        return -1;
    return 0;
}

/* Parse scalar text s into the field of key k (previous value freed first). */
static int parse_scalar(const cfg_key_t *k, void *base, const char *s, hu_error_t *err)
{
    void *f = (char *)base + k->offset;
    hu_error_t e = { "" };

    switch (k->type) {
    case CFG_STRING: {
        char *dup = strdup(s);
        if (!dup)
            return hu_errprintf(err, "out of memory");
        free_value(k, base);
        *(char **)f = dup;
        return 0;
    }
    case CFG_BOOL:
        if (parse_bool(s, f) < 0)
            return hu_errprintf(err, "'%s' is not a boolean (true/false)", s);
        return 0;
    case CFG_INT: {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (!*s || *end || errno)
            return hu_errprintf(err, "'%s' is not an integer", s);
        *(long *)f = v;
        return 0;
    }
    case CFG_DOUBLE:
        if (parse_double(s, f) < 0)
            return hu_errprintf(err, "'%s' is not a number", s);
        return 0;
    case CFG_SIZE:
        if (hu_parse_size(s, 0, f, &e) < 0)
            return hu_errprintf(err, "'%s' is not a size: %s", s, e.text);
        return 0;
    case CFG_BANDWIDTH:
        if (hu_parse_bandwidth(s, f, &e) < 0)
            return hu_errprintf(err, "'%s' is not a bandwidth: %s", s, e.text);
        return 0;
    case CFG_DURATION:
        if (hu_parse_duration(s, HU_DUR_BARE_SECONDS, f, &e) < 0)
            return hu_errprintf(err, "'%s' is not a duration: %s", s, e.text);
        return 0;
    case CFG_HOSTLIST: {
        cfg_names_t n = { 0 };
        if (hu_hostlist_expand(s, &cfg_hostlist_opts, &n.v, &n.n, NULL, &e) < 0)
            return hu_errprintf(err, "'%s': %s", s, e.text);
        if (!(n.text = strdup(s))) {
            hu_hostlist_free(n.v, n.n);
            return hu_errprintf(err, "out of memory");
        }
        free_value(k, base);
        *(cfg_names_t *)f = n;
        return 0;
    }
    case CFG_DOUBLES: {
        /* defaults only: "0,0.1,0.2" */
        cfg_doubles_t d = { 0 };
        char *copy = strdup(s), *save = NULL, *tok;
        if (!copy)
            return hu_errprintf(err, "out of memory");
        for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            double *nv = realloc(d.v, (size_t)(d.n + 1) * sizeof(double));
            if (!nv || parse_double(tok, &nv[d.n]) < 0) {
                free(nv ? nv : d.v);
                free(copy);
                return hu_errprintf(err, "'%s' is not a list of numbers", s);
            }
            d.v = nv;
            d.n++;
        }
        free(copy);
        free_value(k, base);
        *(cfg_doubles_t *)f = d;
        return 0;
    }
    }
    return hu_errprintf(err, "internal: bad type");
}

/* Apply the defaults of every key of section sec to base. */
static int apply_defaults(cfg_section_t sec, void *base, hu_error_t *err)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (keys[i].section != sec || !keys[i].dflt)
            continue;
        if (parse_scalar(&keys[i], base, keys[i].dflt, err) < 0)
            return -1;
    }
    return 0;
}

static void free_section(cfg_section_t sec, void *base)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (keys[i].section == sec)
            free_value(&keys[i], base);
}

/* ------------------------------------------------------------------ YAML walk */
typedef struct {
    const char *path;
    hu_error_t *err;
} walk_t;

/* The message of a refusal, cut at 399 bytes as it always was, after its position. */
#define ERR_MSG_MAX 399

static int errat(walk_t *w, const hu_ynode_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int errat(walk_t *w, const hu_ynode_t *n, const char *fmt, ...)
{
    hu_error_t m;
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(&m, fmt, ap);
    va_end(ap);
    if (n)
        hu_errprintf(w->err, "%s:%d:%d: %.*s", w->path, n->line, n->col, ERR_MSG_MAX, m.text);
    else
        hu_errprintf(w->err, "%s: %.*s", w->path, ERR_MSG_MAX, m.text);
    errno = EINVAL;
    return -1;
}

static const char *scalar(const hu_ynode_t *n)
{
    return n && n->type == HU_YAML_SCALAR ? n->str : NULL;
}

/* A key's value: scalar for most types, sequence for hostlists and doubles. */
static int parse_value(walk_t *w, const cfg_key_t *k, void *base, const hu_ynode_t *v,
                       const char *sec)
{
    hu_error_t e = { "" };
    void *f = (char *)base + k->offset;

    if (k->type == CFG_DOUBLES) {
        cfg_doubles_t d = { 0 };
        if (v->type != HU_YAML_SEQ)
            return errat(w, v, "%s.%s: expected a list of numbers", sec, k->key);
        for (size_t it = 0; it < v->n; it++) {
            const hu_ynode_t *in = v->kids[it];
            const char *s = scalar(in);
            double *nv;
            if (d.n >= 64) {
                free(d.v);
                return errat(w, in, "%s.%s: too many values", sec, k->key);
            }
            if (!(nv = realloc(d.v, (size_t)(d.n + 1) * sizeof(double)))) {
                free(d.v);
                return errat(w, in, "out of memory");
            }
            d.v = nv;
            if (!s || parse_double(s, &d.v[d.n]) < 0) {
                free(d.v);
                return errat(w, in, "%s.%s: expected a number", sec, k->key);
            }
            d.n++;
        }
        free_value(k, base);
        *(cfg_doubles_t *)f = d;
    } else if (k->type == CFG_HOSTLIST && v->type == HU_YAML_SEQ) {
        size_t len = 0;
        char *joined;
        for (size_t it = 0; it < v->n; it++) {
            const hu_ynode_t *in = v->kids[it];
            if (!scalar(in))
                return errat(w, in, "%s.%s: expected a host list", sec, k->key);
            len += strlen(scalar(in)) + 1;
        }
        if (len == 0)
            return errat(w, v, "%s.%s: empty list", sec, k->key);
        if (!(joined = calloc(1, len)))
            return errat(w, v, "out of memory");
        for (size_t it = 0; it < v->n; it++) {
            if (*joined)
                strcat(joined, ",");
            strcat(joined, scalar(v->kids[it]));
        }
        int rc = parse_scalar(k, base, joined, &e);
        free(joined);
        if (rc < 0)
            return errat(w, v, "%s.%s: %s", sec, k->key, e.text);
    } else {
        const char *s = scalar(v);
        if (!s)
            return errat(w, v, "%s.%s: expected a %s, not a %s", sec, k->key, type_name(k->type),
                         v->type == HU_YAML_MAP ? "mapping" : "list");
        /* A quoted empty string is a string; an empty plain scalar (key:) is "no
         * value" and only allowed for strings. */
        if (parse_scalar(k, base, s, &e) < 0)
            return errat(w, v, "%s.%s: %s", sec, k->key, e.text);
    }
    if (k->check && k->check(f, &e) < 0)
        return errat(w, v, "%s.%s: %s", sec, k->key, e.text);
    return 0;
}

/* Parse mapping m into base with the keys of section sec.  Keys with a NULL default
 * must be present. */
static int parse_mapping(walk_t *w, cfg_section_t sec, void *base, const hu_ynode_t *m)
{
    const char *sname = sections[sec].name;
    bool seen[NKEYS] = { false };

    if (m->type != HU_YAML_MAP)
        return errat(w, m, "%s: expected a mapping of keys", sname);
    for (size_t p = 0; p + 1 < m->n; p += 2) {
        const hu_ynode_t *kn = m->kids[p], *vn = m->kids[p + 1];
        const char *key = scalar(kn);
        size_t i;
        if (!key)
            return errat(w, kn, "%s: keys must be scalars", sname);
        for (i = 0; i < NKEYS; i++)
            if (keys[i].section == sec && !strcmp(keys[i].key, key))
                break;
        if (i == NKEYS)
            return errat(w, kn, "unknown key '%s' in section '%s'", key, sname);
        if (seen[i])
            return errat(w, kn, "duplicate key '%s.%s'", sname, key);
        seen[i] = true;
        if (parse_value(w, &keys[i], base, vn, sname) < 0)
            return -1;
    }
    for (size_t i = 0; i < NKEYS; i++)
        if (keys[i].section == sec && !keys[i].dflt && !seen[i])
            return errat(w, m, "%s: missing required key '%s'", sname, keys[i].key);
    return 0;
}

static int parse_list(walk_t *w, cfg_t *cfg, cfg_section_t sec, const hu_ynode_t *seq)
{
    const cfg_section_desc_t *d = &sections[sec];
    void **arr = (void **)((char *)cfg + d->arr_off);
    int *cnt = (int *)((char *)cfg + d->cnt_off);

    if (seq->type != HU_YAML_SEQ)
        return errat(w, seq, "%s: expected a list", d->name);
    for (size_t it = 0; it < seq->n; it++) {
        const hu_ynode_t *in = seq->kids[it];
        char *na = realloc(*arr, (size_t)(*cnt + 1) * d->item_size);
        if (!na)
            return errat(w, in, "out of memory");
        *arr = na;
        void *item = na + (size_t)*cnt * d->item_size;
        memset(item, 0, d->item_size);
        (*cnt)++;
        /* every item struct starts with int line, col */
        ((int *)item)[0] = in->line;
        ((int *)item)[1] = in->col;
        if (apply_defaults(sec, item, w->err) < 0)
            return -1;
        if (parse_mapping(w, sec, item, in) < 0)
            return -1;
    }
    return 0;
}

static int errline(walk_t *w, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int errline(walk_t *w, int line, int col, const char *fmt, ...)
{
    hu_error_t m;
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(&m, fmt, ap);
    va_end(ap);
    hu_errprintf(w->err, "%s:%d:%d: %.*s", w->path, line, col, ERR_MSG_MAX, m.text);
    errno = EINVAL;
    return -1;
}

int cfg_pool_index(const cfg_t *cfg, const char *name)
{
    for (int i = 0; i < cfg->npools; i++)
        if (!strcmp(cfg->pools[i].name, name))
            return i;
    return -1;
}

int cfg_device_index(const cfg_t *cfg, const char *name)
{
    for (int i = 0; i < cfg->ndevices; i++)
        if (!strcmp(cfg->devices[i].name, name))
            return i;
    return -1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *cfg_node_mount(const char *mount, const char *node)
{
    const char *p = strstr(mount, "%n");
    size_t n = strlen(mount) + (p ? strlen(node) : 0) + 1;
    char *s = malloc(n);
    if (s && p)
        snprintf(s, n, "%.*s%s%s", (int)(p - mount), mount, node, p + 2);
    else if (s)
        snprintf(s, n, "%s", mount);
    return s;
}

/* Nodes served by agents: one mount per node, nobody else's. */
static int agents_check(walk_t *w, cfg_t *cfg)
{
    for (int i = 0; i < cfg->nnodes; i++) {
        cfg_nodeset_t *ns = &cfg->nodes[i];
        if (!ns->agent)
            continue;
        if (ns->names.n > 1 && !strstr(ns->mount, "%n"))
            return errline(w, ns->line, ns->col,
                           "nodes: a set of several nodes with agent: "
                           "true needs a mount per node: put %%n (the node's name) in mount");
        for (int j = 0; j < cfg->nnodes; j++)
            if (j != i && !strcmp(cfg->nodes[j].mount, ns->mount))
                return errline(w, ns->line, ns->col,
                               "nodes: mount %s of a set with agent: "
                               "true is also the mount of another set",
                               ns->mount);
    }
    return 0;
}

/* Checks across keys and sections. */
static int cross_check(walk_t *w, cfg_t *cfg)
{
    int total = 0;

    if (agents_check(w, cfg) < 0)
        return -1;

    if (cfg->npools == 0) {
        /* implicit pool "default" */
        if (!(cfg->pools = calloc(1, sizeof(cfg_pool_t))))
            return errat(w, NULL, "out of memory");
        cfg->npools = 1;
        if (apply_defaults(SEC_pools, &cfg->pools[0], w->err) < 0
            || !(cfg->pools[0].name = strdup("default")))
            return errat(w, NULL, "out of memory");
    }
    for (int i = 0; i < cfg->npools; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(cfg->pools[i].name, cfg->pools[j].name))
                return errline(w, cfg->pools[i].line, cfg->pools[i].col,
                               "pools: duplicate pool '%s'", cfg->pools[i].name);
    for (int i = 0; i < cfg->ndevices; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(cfg->devices[i].name, cfg->devices[j].name))
                return errline(w, cfg->devices[i].line, cfg->devices[i].col,
                               "devices: duplicate device '%s'", cfg->devices[i].name);
    for (int i = 0; i < cfg->nnodes; i++) {
        cfg_nodeset_t *ns = &cfg->nodes[i];
        if (cfg_pool_index(cfg, ns->pool) < 0)
            return errline(w, ns->line, ns->col, "nodes: pool '%s' is not defined in pools",
                           ns->pool);
        if (*ns->device && cfg_device_index(cfg, ns->device) < 0)
            return errline(w, ns->line, ns->col, "nodes: device '%s' is not defined in devices",
                           ns->device);
        for (int k = 0; k < ns->names.n; k++)
            if (strlen(ns->names.v[k]) > 63)
                return errline(w, ns->line, ns->col, "nodes: name '%s' is too long",
                               ns->names.v[k]);
        total += ns->names.n;
    }
    if (total > 0) {
        char **all = malloc((size_t)total * sizeof(char *));
        int n = 0;
        if (!all)
            return errat(w, NULL, "out of memory");
        for (int i = 0; i < cfg->nnodes; i++)
            for (int k = 0; k < cfg->nodes[i].names.n; k++)
                all[n++] = cfg->nodes[i].names.v[k];
        qsort(all, (size_t)n, sizeof(char *), name_cmp);
        for (int k = 1; k < n; k++)
            if (!strcmp(all[k], all[k - 1])) {
                /* find the set declaring it a second time */
                for (int i = cfg->nnodes - 1; i >= 0; i--)
                    for (int j = 0; j < cfg->nodes[i].names.n; j++)
                        if (!strcmp(cfg->nodes[i].names.v[j], all[k])) {
                            int line = cfg->nodes[i].line, col = cfg->nodes[i].col;
                            char name[64];
                            snprintf(name, sizeof(name), "%s", all[k]);
                            free(all);
                            return errline(w, line, col, "nodes: node '%s' is declared twice",
                                           name);
                        }
            }
        free(all);
    }
    if (!strcmp(cfg->auth_type, "none")) {
        if (*cfg->listen_address && !cfg_is_loopback(cfg->listen_address))
            return errat(w, NULL,
                         "auth.type none is refused unless listen.address is a "
                         "loopback address (it is '%s')",
                         cfg->listen_address);
    }
    if (!*cfg->listen_address && !*cfg->listen_unix)
        return errat(w, NULL, "neither listen.address nor listen.unix_socket is set");
    /* the SlurmUser's uid */
    {
        char *end;
        errno = 0;
        unsigned long u = strtoul(cfg->auth_slurm_user, &end, 10);
        if (*end == '\0' && !errno) {
            cfg->slurm_uid = (uid_t)u;
        } else {
            struct passwd *pw = getpwnam(cfg->auth_slurm_user);
            if (!pw)
                return errat(w, NULL, "auth.slurm_user: no such user '%s'", cfg->auth_slurm_user);
            cfg->slurm_uid = pw->pw_uid;
        }
    }
    return 0;
}

void cfg_destroy(cfg_t *cfg)
{
    if (!cfg)
        return;
    int saved = errno;
    for (int i = 0; i < cfg->nnodes; i++)
        free_section(SEC_nodes, &cfg->nodes[i]);
    for (int i = 0; i < cfg->ndevices; i++)
        free_section(SEC_devices, &cfg->devices[i]);
    for (int i = 0; i < cfg->npools; i++)
        free_section(SEC_pools, &cfg->pools[i]);
    free(cfg->nodes);
    free(cfg->devices);
    free(cfg->pools);
    for (int s = 0; s < SEC__COUNT; s++)
        if (!sections[s].is_list)
            free_section((cfg_section_t)s, cfg);
    free(cfg->path);
    free(cfg);
    errno = saved;
}

/* The whole of f into a malloc'd buffer (*len bytes, NUL-terminated). */
static char *read_all(FILE *f, size_t *len)
{
    size_t n = 0, cap = 0;
    char *buf = NULL;

    for (;;) {
        if (cap - n < 4096 + 1) {
            size_t nc = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                int e = errno ? errno : EIO;
                free(buf);
                errno = e;
                return NULL;
            }
            break;
        }
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* libyaml's refusal, worded as bbmgr always did: "FILE:LINE:COL: problem context". */
static void yaml_refusal(const char *path, const hu_yaml_fail_t *f, hu_error_t *err)
{
    if (f->why == HU_YAML_NOMEM) {
        hu_errprintf(err, "%s: out of memory", path);
        errno = ENOMEM;
        return;
    }
    /* libyaml gives no line to an encoding error: 1:1 as it always was */
    int line = f->why == HU_YAML_ENCODING ? 1 : f->line;
    int col = f->why == HU_YAML_ENCODING ? 1 : f->col;
    hu_errprintf(err, "%s:%d:%d: %s%s%s", path, line, col,
                 f->problem ? f->problem : "YAML syntax error", f->context ? " " : "",
                 f->context ? f->context : "");
    errno = EINVAL;
}

cfg_t *cfg_load(const char *path, hu_error_t *err)
{
    /* aliases share their node, as libyaml's documents do; the node bound keeps
     * an alias bomb from growing the tree */
    static const hu_yaml_opts_t yopts = { .aliases = true, .max_nodes = 1000000 };
    hu_yaml_t *y = NULL;
    hu_ydoc_t *doc = NULL, *doc2 = NULL;
    hu_yaml_fail_t yf;
    hu_error_t ye;
    cfg_t *cfg = NULL;
    FILE *f = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc;
    walk_t w = { path, err };
    bool seen[SEC__COUNT] = { false };

    if (!(cfg = calloc(1, sizeof(*cfg))) || !(cfg->path = strdup(path))) {
        errno = ENOMEM;
        hu_errprintf(err, "%s: out of memory", path);
        goto error;
    }
    for (int s = 0; s < SEC__COUNT; s++)
        if (!sections[s].is_list && apply_defaults((cfg_section_t)s, cfg, err) < 0)
            goto error;
    if (!(f = fopen(path, "r")) || !(text = read_all(f, &len))) {
        hu_errprintf(err, "%s: %s", path, strerror(errno));
        goto error;
    }
    if (!(y = hu_yaml_open(text, len, &yopts, &ye))) {
        hu_errprintf(err, "%s: %s", path, ye.text);
        goto error;
    }
    if ((rc = hu_yaml_next(y, &doc, &yf, &ye)) < 0) {
        yaml_refusal(path, &yf, err);
        goto error;
    }
    const hu_ynode_t *root = rc ? hu_ydoc_root(doc) : NULL;
    if (root) { /* an empty file means all defaults */
        if (root->type != HU_YAML_MAP) {
            errat(&w, root, "the file must be a mapping of sections");
            goto error;
        }
        for (size_t p = 0; p + 1 < root->n; p += 2) {
            const hu_ynode_t *kn = root->kids[p], *vn = root->kids[p + 1];
            const char *name = scalar(kn);
            int s;
            if (!name) {
                errat(&w, kn, "section names must be scalars");
                goto error;
            }
            for (s = 0; s < SEC__COUNT; s++)
                if (!strcmp(sections[s].name, name))
                    break;
            if (s == SEC__COUNT) {
                errat(&w, kn, "unknown section '%s'", name);
                goto error;
            }
            if (seen[s]) {
                errat(&w, kn, "duplicate section '%s'", name);
                goto error;
            }
            seen[s] = true;
            /* "section:" with nothing: keep the defaults */
            if (vn->type == HU_YAML_SCALAR && vn->len == 0 && vn->plain)
                continue;
            if (sections[s].is_list ? parse_list(&w, cfg, (cfg_section_t)s, vn) < 0
                                    : parse_mapping(&w, (cfg_section_t)s, cfg, vn) < 0)
                goto error;
        }
        /* a second document is an error (one that does not parse is not seen) */
        if (hu_yaml_next(y, &doc2, NULL, NULL) > 0) {
            errat(&w, NULL, "more than one YAML document");
            goto error;
        }
    }
    if (cross_check(&w, cfg) < 0)
        goto error;
    hu_ydoc_free(doc);
    hu_yaml_close(y);
    free(text);
    fclose(f);
    return cfg;
error:
    hu_ydoc_free(doc2);
    hu_ydoc_free(doc);
    hu_yaml_close(y);
    free(text);
    if (f)
        fclose(f);
    cfg_destroy(cfg);
    if (errno == 0)
        errno = EINVAL;
    return NULL;
}

int cfg_restart_needed(const cfg_t *a, const cfg_t *b, char *buf, size_t len)
{
    int n = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < NKEYS; i++) {
        const cfg_key_t *k = &keys[i];
        if (k->live || sections[k->section].is_list)
            continue;
        const void *fa = (const char *)a + k->offset, *fb = (const char *)b + k->offset;
        bool diff = false;
        switch (k->type) {
        case CFG_STRING:
            diff = strcmp(*(char *const *)fa, *(char *const *)fb) != 0;
            break;
        case CFG_BOOL:
            diff = *(const bool *)fa != *(const bool *)fb;
            break;
        case CFG_INT:
            diff = *(const long *)fa != *(const long *)fb;
            break;
        case CFG_SIZE:
            diff = *(const uint64_t *)fa != *(const uint64_t *)fb;
            break;
        case CFG_DOUBLE:
        case CFG_BANDWIDTH:
        case CFG_DURATION:
            diff = *(const double *)fa != *(const double *)fb;
            break;
        default:
            break;
        }
        if (diff) {
            size_t l = strlen(buf);
            if (l < len)
                snprintf(buf + l, len - l, "%s%s.%s", n ? ", " : "", sections[k->section].name,
                         k->key);
            n++;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ docs */
void cfg_print_help(FILE *f)
{
    fprintf(f, "bbmgr.yaml keys (section.key  type  [default]  *: changes need a restart)\n");
    for (int s = 0; s < SEC__COUNT; s++) {
        fprintf(f, "\n%s%s: %s\n", sections[s].name, sections[s].is_list ? " (list)" : "",
                sections[s].help);
        for (size_t i = 0; i < NKEYS; i++) {
            const cfg_key_t *k = &keys[i];
            if (k->section != (cfg_section_t)s)
                continue;
            char head[64];
            snprintf(head, sizeof(head), "%s.%s%s", sections[s].name, k->key, k->live ? "" : "*");
            fprintf(f, "  %-28s %-9s %s\n", head, type_name(k->type),
                    k->dflt ? (*k->dflt ? k->dflt : "\"\"") : "(required)");
            fprintf(f, "      %s\n", k->help);
        }
    }
}

static void man_text(FILE *f, const char *s)
{
    /* escape groff: backslashes, leading dots/quotes */
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
    }
}

void cfg_print_man(FILE *f)
{
    fputs(".\\\" SPDX-License-Identifier: GPL-2.0-or-later\n"
          ".\\\" Generated by 'bbmgr config --man' from the key table of bbmgr/config.h.\n"
          ".\\\" Do not edit: change the table and regenerate (a test checks it).\n"
          ".TH BBMGR.YAML 5 \"\" \"Harmonia\" \"File formats\"\n"
          ".SH NAME\n"
          "bbmgr.yaml \\- configuration of the Harmonia burst\\-buffer manager bbmgrd\n"
          ".SH DESCRIPTION\n"
          "bbmgrd(8) reads a YAML file of sections.  Unknown sections and keys, values of\n"
          "the wrong type and values that fail their check refuse to start the daemon;\n"
          "the message names the file, line, column and reason.  On SIGHUP the file is\n"
          "read again: if it is valid, the keys marked \\fBlive\\fR take effect at once\n"
          "(policy, limits, logging, nodes added or drained); others keep their running\n"
          "value until a restart (a warning names them).  An invalid file is refused and\n"
          "the running configuration is kept.\n"
          ".PP\n"
          "Sizes take a unit: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB\n"
          "(powers of 1024).  Bandwidths are sizes per second (\\fB2 GB/s\\fR).\n"
          "Durations take s, m, h, d or [HH:]MM:SS; a bare number is seconds.\n"
          "Host lists are written as Slurm writes them: \\fBbb[01\\-04,07],io1\\fR.\n"
          "Policy ids are those of bbsim(1): fairshare, fcfs, static, roundrobin,\n"
          "mindilation, maxsyseff, minmax:\\fIgamma\\fR, \\fIid\\fR\\-priority, set10,\n"
          "set\\-fairshare, priority\\-sharing, periodic\\-throu, periodic\\-cong, persched,\n"
          "harmonia\\-maxbw, harmonia\\-minstall, harmonia\\-fairness,\n"
          "harmonia\\-buffer\\-eff, harmonia\\-priority (when built in).\n",
          f);
    for (int s = 0; s < SEC__COUNT; s++) {
        fprintf(f, ".SH SECTION %s%s\n", sections[s].name,
                sections[s].is_list ? " (a list of mappings)" : "");
        man_text(f, sections[s].help);
        fputc('\n', f);
        for (size_t i = 0; i < NKEYS; i++) {
            const cfg_key_t *k = &keys[i];
            if (k->section != (cfg_section_t)s)
                continue;
            fprintf(f, ".TP\n.B %s\n(%s; ", k->key, type_name(k->type));
            if (!k->dflt)
                fputs("required", f);
            else {
                fputs("default \\fB", f);
                man_text(f, *k->dflt ? k->dflt : "\"\"");
                fputs("\\fR", f);
            }
            fputs(k->live ? "; live)\n" : "; restart)\n", f);
            man_text(f, k->help);
            fputc('\n', f);
        }
    }
    fputs(".SH EXAMPLE\n"
          ".nf\n"
          "listen:\n"
          "  address: 127.0.0.1\n"
          "  port: 7470\n"
          "  unix_socket: /run/harmonia/bbmgrd.sock\n"
          "state:\n"
          "  dir: /var/lib/harmonia\n"
          "auth:\n"
          "  slurm_user: slurm\n"
          "policy:\n"
          "  id: auto\n"
          "  overprovision: 1.5\n"
          "devices:\n"
          "  \\- name: nvme\n"
          "    msca: [0, 0.02, 0.05, 0.08]\n"
          "pools:\n"
          "  \\- name: nvme\n"
          "    granularity: 1GiB\n"
          "nodes:\n"
          "  \\- names: bb[01\\-04]\n"
          "    capacity: 1TiB\n"
          "    bandwidth: 2 GB/s\n"
          "    device: nvme\n"
          "    mount: /mnt/bb\n"
          "    pool: nvme\n"
          ".fi\n"
          ".SH FILES\n"
          "/etc/harmonia/bbmgr.yaml\n"
          ".SH SEE ALSO\n"
          "bbmgrd(8), bbmgr(1)\n",
          f);
}
