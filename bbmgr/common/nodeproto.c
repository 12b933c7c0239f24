/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodeproto.c — messages between bbmgrd and bbnoded, the agent's task table.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodeproto.h"
#include "util.h"
#include "libhutil/directive.h"

/* a message of the protocol is refused: EINVAL with the reason */
#define bad(err, ...) util_fail(EINVAL, (err), __VA_ARGS__)

/* Every key of o must be in known (NULL-terminated). */
static int only_keys(json_t *o, const char *what, const char *const *known, hu_error_t *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(o))
        return bad(err, "%s: must be an object", what);
    json_object_foreach (o, k, v) {
        const char *const *p = known;
        while (*p && strcmp(*p, k))
            p++;
        if (!*p)
            return bad(err, "%s: unknown field '%s'", what, k);
    }
    return 0;
}

/* o's member k; NULL when absent (then *rc is -1 if it is required, else 0). */
static json_t *member(json_t *o, const char *what, const char *k, bool required, int *rc,
                      hu_error_t *err)
{
    json_t *v = json_object_get(o, k);
    *rc = 0;
    if ((!v || json_is_null(v)) && required)
        *rc = bad(err, "%s: '%s' is required", what, k);
    return v && !json_is_null(v) ? v : NULL;
}

/* What get_field() reads, and the type of its 'out'. */
enum field_kind {
    F_U64,    /* uint64_t, an integer >= lo */
    F_I64,    /* int64_t, an integer >= lo */
    F_DOUBLE, /* double, a finite number >= lo */
    F_BOOL,   /* bool */
    F_STR,    /* const char *, pointing into o */
};

/* o's member k, a value of that kind into *out; absent (or null): 0 with out
 * unchanged, or -1 if it is required; of another kind: -1, msg says why. */
static int get_field(json_t *o, const char *what, const char *k, bool required,
                     enum field_kind kind, int64_t lo, void *out, hu_error_t *err)
{
    int rc;
    json_t *v = member(o, what, k, required, &rc, err);
    if (!v)
        return rc;
    switch (kind) {
    case F_U64:
    case F_I64:
        if (!json_is_integer(v) || json_integer_value(v) < lo)
            return lo ? bad(err, "%s: '%s' must be an integer >= %jd", what, k, (intmax_t)lo)
                      : bad(err, "%s: '%s' must be a non-negative integer", what, k);
        if (kind == F_U64)
            *(uint64_t *)out = (uint64_t)json_integer_value(v);
        else
            *(int64_t *)out = (int64_t)json_integer_value(v);
        return 0;
    case F_DOUBLE:
        if (!json_is_number(v) || !isfinite(json_number_value(v))
            || json_number_value(v) < (double)lo)
            return bad(err, "%s: '%s' must be a non-negative number", what, k);
        *(double *)out = json_number_value(v);
        return 0;
    case F_BOOL:
        if (!json_is_boolean(v))
            return bad(err, "%s: '%s' must be a boolean", what, k);
        *(bool *)out = json_is_true(v);
        return 0;
    case F_STR:
        if (!json_is_string(v))
            return bad(err, "%s: '%s' must be a string", what, k);
        *(const char **)out = json_string_value(v);
        return 0;
    }
    return bad(err, "%s: '%s': unknown kind", what, k);
}

/* ------------------------------------------------------------------ status */
json_t *np_status_json(const np_status_t *s)
{
    json_t *o = json_pack(
        "{s:I s:I s:b s:f s:f s:f s:i s:I}", "free_bytes", (json_int_t)s->free_bytes, "used_bytes",
        (json_int_t)s->used_bytes, "busy", s->busy, "read_bw", s->read_bw, "write_bw", s->write_bw,
        "interval", s->interval, "queue", s->queue, "errors", (json_int_t)s->errors);
    if (o && s->device_read_bw >= 0 && s->device_write_bw >= 0) {
        json_object_set_new(o, "device_read_bw", json_real(s->device_read_bw));
        json_object_set_new(o, "device_write_bw", json_real(s->device_write_bw));
    }
    if (o && s->leftover_bytes > 0) /* only then: a bbmgrd older than it refuses it */
        json_object_set_new(o, "leftover_bytes", json_integer((json_int_t)s->leftover_bytes));
    return o;
}

double np_status_foreign(const np_status_t *s)
{
    if (s->device_read_bw < 0 || s->device_write_bw < 0)
        return 0;
    double f = s->device_read_bw + s->device_write_bw - s->read_bw - s->write_bw;
    return f > 0 ? f : 0;
}

int np_status_parse(json_t *o, np_status_t *s, hu_error_t *err)
{
    static const char *const keys[] = { "free_bytes",      "used_bytes",     "busy",
                                        "read_bw",         "write_bw",       "interval",
                                        "queue",           "errors",         "device_read_bw",
                                        "device_write_bw", "leftover_bytes", NULL };
    uint64_t q = 0;
    memset(s, 0, sizeof(*s));
    s->device_read_bw = s->device_write_bw = -1;
    if (only_keys(o, "status", keys, err) < 0
        || get_field(o, "status", "free_bytes", true, F_U64, 0, &s->free_bytes, err) < 0
        || get_field(o, "status", "used_bytes", true, F_U64, 0, &s->used_bytes, err) < 0
        || get_field(o, "status", "busy", false, F_BOOL, 0, &s->busy, err) < 0
        || get_field(o, "status", "read_bw", true, F_DOUBLE, 0, &s->read_bw, err) < 0
        || get_field(o, "status", "write_bw", true, F_DOUBLE, 0, &s->write_bw, err) < 0
        || get_field(o, "status", "interval", false, F_DOUBLE, 0, &s->interval, err) < 0
        || get_field(o, "status", "queue", false, F_U64, 0, &q, err) < 0
        || get_field(o, "status", "errors", false, F_U64, 0, &s->errors, err) < 0
        || get_field(o, "status", "device_read_bw", false, F_DOUBLE, 0, &s->device_read_bw, err) < 0
        || get_field(o, "status", "device_write_bw", false, F_DOUBLE, 0, &s->device_write_bw, err)
               < 0
        || get_field(o, "status", "leftover_bytes", false, F_U64, 0, &s->leftover_bytes, err) < 0)
        return -1;
    if ((s->device_read_bw < 0) != (s->device_write_bw < 0))
        return bad(err, "status: 'device_read_bw' and 'device_write_bw' go together");
    if (q > 1000000)
        return bad(err, "status: 'queue' is out of range");
    s->queue = (int)q;
    return 0;
}

/* ------------------------------------------------------------------ tasks */
json_t *np_task_json(const np_task_t *t)
{
    json_t *o = json_pack("{s:I s:s s:f s:I s:I s:b s:b s:s s:s}", "id", (json_int_t)t->tid, "job",
                          t->job, "weight", t->weight, "uid", (json_int_t)t->uid, "gid",
                          (json_int_t)t->gid, "stage_out", t->stage_out, "directory", t->directory,
                          "source", t->src, "destination", t->dst);
    if (o && t->user)
        json_object_set_new(o, "user", json_string(t->user));
    if (o && t->resync) {
        json_object_set_new(o, "resync", json_true());
        json_object_set_new(o, "done_at", json_real(t->done_at));
    }
    if (o && t->run > 0)
        json_object_set_new(o, "run", json_integer(t->run));
    if (o && !t->stage_out && t->max_bytes > 0)
        json_object_set_new(o, "max_bytes", json_integer(t->max_bytes));
    if (o && t->nparts > 1) {
        json_t *r = json_array();
        for (int k = 0; r && k < t->nparts; k++)
            json_array_append_new(r, json_string(t->roots[k]));
        json_object_set_new(o, "part", json_integer(t->part));
        json_object_set_new(o, "roots", r);
    }
    return o;
}

/* "part" and "roots" of a spread transfer: both or neither, 2 to MOVER_MAX_PARTS
 * roots, each an absolute path. */
static int parse_parts(json_t *o, np_task_t *t, hu_error_t *err)
{
    json_t *p = json_object_get(o, "part"), *r = json_object_get(o, "roots");
    if (!p && !r)
        return 0;
    size_t n = json_array_size(r);
    if (!json_is_integer(p) || !json_is_array(r) || n < 2 || n > MOVER_MAX_PARTS
        || json_integer_value(p) < 0 || (size_t)json_integer_value(p) >= n)
        return bad(err,
                   "task: 'part' and 'roots' go together: a part number below "
                   "the count of 2 to %d roots",
                   MOVER_MAX_PARTS);
    for (size_t k = 0; k < n; k++) {
        const char *s = json_string_value(json_array_get(r, k));
        if (!s || !hu_bb_path_ok(s))
            return bad(err, "task: 'roots' must be absolute paths without '.' or '..' "
                            "components or newlines");
        t->roots[k] = s;
    }
    t->part = (int)json_integer_value(p);
    t->nparts = (int)n;
    return 0;
}

int np_task_parse(json_t *o, np_task_t *t, hu_error_t *err)
{
    static const char *const keys[] = { "id",     "job",         "weight",    "uid",
                                        "gid",    "user",        "stage_out", "directory",
                                        "source", "destination", "resync",    "done_at",
                                        "part",   "roots",       "run",       "max_bytes",
                                        NULL };
    uint64_t uid = 0, gid = 0;
    memset(t, 0, sizeof(*t));
    if (only_keys(o, "task", keys, err) < 0
        || get_field(o, "task", "id", true, F_U64, 0, &t->tid, err) < 0
        || get_field(o, "task", "job", true, F_STR, 0, &t->job, err) < 0
        || get_field(o, "task", "weight", true, F_DOUBLE, 0, &t->weight, err) < 0
        || get_field(o, "task", "uid", true, F_U64, 0, &uid, err) < 0
        || get_field(o, "task", "gid", true, F_U64, 0, &gid, err) < 0
        || get_field(o, "task", "user", false, F_STR, 0, &t->user, err) < 0
        || get_field(o, "task", "stage_out", false, F_BOOL, 0, &t->stage_out, err) < 0
        || get_field(o, "task", "directory", false, F_BOOL, 0, &t->directory, err) < 0
        || get_field(o, "task", "source", true, F_STR, 0, &t->src, err) < 0
        || get_field(o, "task", "destination", true, F_STR, 0, &t->dst, err) < 0
        || get_field(o, "task", "resync", false, F_BOOL, 0, &t->resync, err) < 0
        || get_field(o, "task", "done_at", false, F_DOUBLE, 0, &t->done_at, err) < 0
        || parse_parts(o, t, err) < 0)
        return -1;
    json_t *run = json_object_get(o, "run");
    if (run
        && (!json_is_integer(run) || json_integer_value(run) < 0
            || json_integer_value(run) > 1000000))
        return bad(err, "task %ju: 'run' must be an integer in 0..1000000", (uintmax_t)t->tid);
    t->run = run ? (unsigned)json_integer_value(run) : 0;
    /* a stage-in's byte limit on this node (its share of the allocation or
     * persistent buffer); absent: none (a bbmgrd older than the key) */
    json_t *mb = json_object_get(o, "max_bytes");
    if (mb && (!json_is_integer(mb) || json_integer_value(mb) <= 0))
        return bad(err, "task %ju: 'max_bytes' must be a positive integer", (uintmax_t)t->tid);
    t->max_bytes = mb && !t->stage_out ? (int64_t)json_integer_value(mb) : 0;
    if (t->tid == 0)
        return bad(err, "task: 'id' must be positive");
    if (!(t->weight > 0))
        return bad(err, "task %ju: 'weight' must be positive", (uintmax_t)t->tid);
    if (uid >= (uint64_t)(uid_t)-1 || gid >= (uint64_t)(gid_t)-1)
        return bad(err, "task %ju: uid or gid out of range", (uintmax_t)t->tid);
    if (!*t->job || strlen(t->job) >= 64)
        return bad(err, "task %ju: 'job' must have 1 to 63 characters", (uintmax_t)t->tid);
    if (!hu_bb_path_ok(t->src) || !hu_bb_path_ok(t->dst)) /* bbmgrd's own rule */
        return bad(err,
                   "task %ju: source and destination must be absolute paths "
                   "without '.' or '..' components or newlines",
                   (uintmax_t)t->tid);
    if (t->resync && !t->stage_out)
        return bad(err, "task %ju: only a stage-out is resynced", (uintmax_t)t->tid);
    t->uid = (uid_t)uid;
    t->gid = (gid_t)gid;
    return 0;
}

/* ------------------------------------------------------------------ results */
static const char *const state_names[] = {
    [MV_RUNNING] = "running",
    [MV_DONE] = "done",
    [MV_FAILED] = "failed",
    [MV_CANCELLED] = "cancelled",
    [MV_DONE_SYNCING] = "done_syncing",
    [MV_DURABLE] = "durable",
    [MV_NOT_DURABLE] = "not_durable",
};

/* Length of the UTF-8 character at s that is not a control character (C0, DEL,
 * C1), or 0. */
static size_t utf8_char(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return c >= 0x20 && c != 0x7f;
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 && !(c == 0xc2 && s[1] < 0xa0) ? 2 : 0;
    size_t n = c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n)
        return 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

char *np_message_clean(const char *in, char *out)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0;
    while (s && *s) {
        size_t n = utf8_char(s);
        if (o + (n ? n : 1) > NP_MESSAGE_MAX)
            break;
        if (n) {
            memcpy(out + o, s, n);
            o += n;
            s += n;
        } else {
            out[o++] = '?';
            s++;
        }
    }
    out[o] = '\0';
    return out;
}

const char *np_state_name(mover_state_t s)
{
    return (unsigned)s < sizeof(state_names) / sizeof(*state_names) ? state_names[s] : "?";
}

int np_state_parse(const char *s)
{
    for (size_t i = 0; s && i < sizeof(state_names) / sizeof(*state_names); i++)
        if (!strcmp(state_names[i], s))
            return (int)i;
    return -1;
}

json_t *np_result_json(const np_result_t *r)
{
    json_t *o = json_pack("{s:I s:s s:I s:I}", "id", (json_int_t)r->id, "state",
                          np_state_name(r->state), "bytes_done", (json_int_t)r->bytes_done,
                          "bytes_total", (json_int_t)r->bytes_total);
    if (o && r->message)
        json_object_set_new(o, "message", json_string(r->message));
    return o;
}

int np_result_parse(json_t *o, np_result_t *r, hu_error_t *err)
{
    static const char *const keys[] = {
        "id", "state", "bytes_done", "bytes_total", "message", NULL
    };
    const char *st = NULL;
    memset(r, 0, sizeof(*r));
    if (only_keys(o, "result", keys, err) < 0
        || get_field(o, "result", "id", true, F_U64, 0, &r->id, err) < 0
        || get_field(o, "result", "state", true, F_STR, 0, &st, err) < 0
        || get_field(o, "result", "bytes_done", true, F_I64, 0, &r->bytes_done, err) < 0
        || get_field(o, "result", "bytes_total", true, F_I64, -1, &r->bytes_total, err) < 0
        || get_field(o, "result", "message", false, F_STR, 0, &r->message, err) < 0)
        return -1;
    int s = np_state_parse(st);
    if (s < 0)
        return bad(err, "result %ju: unknown state '%s'", (uintmax_t)r->id, st);
    r->state = (mover_state_t)s;
    return 0;
}

/* ------------------------------------------------------------------ directories */
bool np_dir_name_ok(const char *name, bool persistent)
{
    /* a persistent buffer's: the one name rule; a job's: one plain component, never
     * a name the mount keeps for itself (persistent, lost+found, .harmonia*) */
    if (persistent)
        return hu_bb_name_ok(name);
    return name && *name && strlen(name) < 256 && strcmp(name, ".") && strcmp(name, "..")
           && !strchr(name, '/') && strcmp(name, "persistent") && strcmp(name, "lost+found")
           && strncmp(name, ".harmonia", 9);
}

json_t *np_dir_json(const np_dir_t *d)
{
    json_t *o = json_pack("{s:s s:b s:I s:I}", "name", d->name, "persistent", d->persistent, "uid",
                          (json_int_t)d->uid, "gid", (json_int_t)d->gid);
    if (o && d->inc > 0)
        json_object_set_new(o, "inc", json_real(d->inc));
    if (o && d->keep)
        json_object_set_new(o, "keep", json_true());
    if (o && d->capacity && !d->keep)
        json_object_set_new(o, "capacity", json_integer((json_int_t)d->capacity));
    if (o && d->keep && d->ino) {
        json_object_set_new(o, "dev", json_integer((json_int_t)d->dev));
        json_object_set_new(o, "ino", json_integer((json_int_t)d->ino));
    }
    return o;
}

int np_dir_parse(json_t *o, np_dir_t *d, hu_error_t *err)
{
    static const char *const keys[] = { "name", "persistent", "uid", "gid",      "inc",
                                        "keep", "dev",        "ino", "capacity", NULL };
    uint64_t uid = 0, gid = 0;
    memset(d, 0, sizeof(*d));
    if (only_keys(o, "directory", keys, err) < 0
        || get_field(o, "directory", "name", true, F_STR, 0, &d->name, err) < 0
        || get_field(o, "directory", "persistent", false, F_BOOL, 0, &d->persistent, err) < 0
        || get_field(o, "directory", "uid", true, F_U64, 0, &uid, err) < 0
        || get_field(o, "directory", "gid", true, F_U64, 0, &gid, err) < 0
        || get_field(o, "directory", "inc", false, F_DOUBLE, 0, &d->inc, err) < 0
        || get_field(o, "directory", "keep", false, F_BOOL, 0, &d->keep, err) < 0
        || get_field(o, "directory", "dev", false, F_U64, 0, &d->dev, err) < 0
        || get_field(o, "directory", "ino", false, F_U64, 1, &d->ino, err) < 0
        || get_field(o, "directory", "capacity", false, F_U64, 1, &d->capacity, err) < 0)
        return -1;
    if ((json_object_get(o, "dev") != NULL) != (d->ino != 0) || (d->ino && !d->keep)
        || d->dev > INT64_MAX || d->ino > INT64_MAX)
        return bad(err,
                   "directory '%s': 'dev' and 'ino' go together, with 'keep', "
                   "each below 2^63",
                   d->name);
    if (!np_dir_name_ok(d->name, d->persistent))
        return bad(err, "directory '%s': not usable as a directory name", d->name);
    if (uid >= (uint64_t)(uid_t)-1 || gid >= (uint64_t)(gid_t)-1)
        return bad(err, "directory '%s': uid or gid out of range", d->name);
    d->uid = (uid_t)uid;
    d->gid = (gid_t)gid;
    return 0;
}

/* ------------------------------------------------------------------ usage */
json_t *np_usage_json(const np_usage_t *u)
{
    return json_pack("{s:s s:I s:I s:I}", u->persistent ? "persistent" : "job", u->name, "used",
                     (json_int_t)u->used, "dev", (json_int_t)u->dev, "ino", (json_int_t)u->ino);
}

int np_usage_parse(json_t *o, np_usage_t *u, hu_error_t *err)
{
    static const char *const keys[] = { "job", "persistent", "used", "dev", "ino", NULL };
    memset(u, 0, sizeof(*u));
    if (only_keys(o, "usage", keys, err) < 0)
        return -1;
    u->persistent = json_object_get(o, "persistent") != NULL;
    if (u->persistent == (json_object_get(o, "job") != NULL))
        return bad(err, "usage: exactly one of 'job' and 'persistent' names the buffer");
    if (get_field(o, "usage", u->persistent ? "persistent" : "job", true, F_STR, 0, &u->name, err)
            < 0
        || get_field(o, "usage", "used", true, F_U64, 0, &u->used, err) < 0
        || get_field(o, "usage", "dev", true, F_U64, 0, &u->dev, err) < 0
        || get_field(o, "usage", "ino", true, F_U64, 0, &u->ino, err) < 0)
        return -1;
    if (u->used > INT64_MAX || u->dev > INT64_MAX || u->ino > INT64_MAX)
        return bad(err, "usage of '%s': 'used', 'dev' and 'ino' are each below 2^63", u->name);
    if (!np_dir_name_ok(u->name, u->persistent))
        return bad(err, "usage of '%s': not usable as a directory name", u->name);
    return 0;
}

/* ------------------------------------------------------------------ task table */
typedef struct {
    uint64_t seq;
    np_result_t r; /* message owned */
} outmsg_t;

typedef struct {
    uint64_t id;
    np_tstate_t state;
    unsigned run; /* the run bbmgrd listed it with */
} tentry_t;

struct np_table {
    tentry_t *v;
    size_t n, cap;
    outmsg_t *out;
    size_t nout, capout;
    uint64_t seq;
};

np_table_t *np_table_create(void)
{
    return calloc(1, sizeof(np_table_t));
}

void np_table_destroy(np_table_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nout; i++)
        free((char *)t->out[i].r.message);
    free(t->out);
    free(t->v);
    free(t);
}

static tentry_t *find(const np_table_t *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].id == id)
            return &t->v[i];
    return NULL;
}

int np_table_state(const np_table_t *t, uint64_t id)
{
    const tentry_t *e = find(t, id);
    return e ? (int)e->state : -1;
}

size_t np_table_size(const np_table_t *t)
{
    return t->n;
}

size_t np_table_pending(const np_table_t *t)
{
    return t->nout;
}

int np_table_result(np_table_t *t, const np_result_t *r)
{
    tentry_t *e = find(t, r->id);
    char *m = NULL;
    char clean[NP_MESSAGE_MAX + 1];
    if (!e)
        return 0;
    if (r->message && !(m = strdup(np_message_clean(r->message, clean))))
        return -1;
    if (r->state == MV_RUNNING) {
        /* progress replaces the older progress of the task still in the outbox (the
         * outbox stays in the order of its sequence numbers) */
        for (size_t i = 0; i < t->nout; i++)
            if (t->out[i].r.id == r->id && t->out[i].r.state == MV_RUNNING) {
                free((char *)t->out[i].r.message);
                memmove(&t->out[i], &t->out[i + 1], (t->nout - i - 1) * sizeof(*t->out));
                t->nout--;
                break;
            }
    }
    if (t->nout == t->capout) {
        size_t cap = t->capout ? 2 * t->capout : 16;
        outmsg_t *v = realloc(t->out, cap * sizeof(*v));
        if (!v) {
            free(m);
            return -1;
        }
        t->out = v;
        t->capout = cap;
    }
    t->out[t->nout].seq = ++t->seq;
    t->out[t->nout].r = *r;
    t->out[t->nout].r.message = m;
    t->nout++;
    switch (r->state) {
    case MV_RUNNING:
        break;
    case MV_DONE_SYNCING:
        e->state = NPT_SYNCING;
        break;
    default:
        e->state = NPT_FINISHED;
        break;
    }
    return 0;
}

json_t *np_table_outbox(np_table_t *t, size_t budget, uint64_t *upto)
{
    json_t *a = json_array();
    size_t used = 2; /* [] */
    *upto = 0;
    for (size_t i = 0; a && i < t->nout; i++) {
        json_t *o = np_result_json(&t->out[i].r);
        size_t cost = o ? json_dumpb(o, NULL, 0, JSON_COMPACT) + 1 : 0;
        if (o && i == 0 && used + cost > budget) {
            /* alone too large: its message goes, the result does not wait for ever */
            np_result_t r = t->out[i].r;
            r.message = "(message dropped: larger than a report may be)";
            json_decref(o);
            o = np_result_json(&r);
        } else if (!o || used + cost > budget) {
            json_decref(o);
            break;
        }
        used += cost;
        if (json_array_append_new(a, o) < 0)
            break;
        *upto = t->out[i].seq;
    }
    return a;
}

void np_table_acked(np_table_t *t, uint64_t upto)
{
    size_t k = 0;
    for (size_t i = 0; i < t->nout; i++) {
        if (t->out[i].seq <= upto)
            free((char *)t->out[i].r.message);
        else
            t->out[k++] = t->out[i];
    }
    t->nout = k;
}

static bool in_outbox(const np_table_t *t, uint64_t id)
{
    for (size_t i = 0; i < t->nout; i++)
        if (t->out[i].r.id == id)
            return true;
    return false;
}

static bool listed(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

int np_table_listed(np_table_t *t, const uint64_t *ids, const unsigned *runs, size_t n,
                    uint64_t **submit, size_t *n_submit, uint64_t **cancel, size_t *n_cancel)
{
    *submit = calloc(n ? n : 1, sizeof(uint64_t));
    *cancel = calloc(t->n ? t->n : 1, sizeof(uint64_t));
    *n_submit = *n_cancel = 0;
    if (!*submit || !*cancel)
        goto nomem;
    /* forget or cancel what is no longer listed */
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        tentry_t e = t->v[i];
        if (!listed(ids, n, e.id)) {
            if (e.state == NPT_RUNNING) {
                (*cancel)[(*n_cancel)++] = e.id;
                e.state = NPT_FINISHED; /* cancelled once; its result matters to nobody */
            } else if (e.state == NPT_FINISHED && !in_outbox(t, e.id))
                continue;
        }
        t->v[k++] = e;
    }
    t->n = k;
    /* new ones, and finished ones listed for a new run */
    for (size_t i = 0; i < n; i++) {
        tentry_t *e = find(t, ids[i]);
        unsigned run = runs ? runs[i] : 0;
        if (e && e->state == NPT_FINISHED && run > e->run && !in_outbox(t, e->id)) {
            e->state = NPT_RUNNING;
            e->run = run;
            (*submit)[(*n_submit)++] = ids[i];
            continue;
        }
        if (e || listed(*submit, *n_submit, ids[i]))
            continue;
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 16;
            tentry_t *v = realloc(t->v, cap * sizeof(*v));
            if (!v)
                goto nomem;
            t->v = v;
            t->cap = cap;
        }
        t->v[t->n++] = (tentry_t){ .id = ids[i], .state = NPT_RUNNING, .run = run };
        (*submit)[(*n_submit)++] = ids[i];
    }
    return 0;
nomem:
    free(*submit);
    free(*cancel);
    *submit = *cancel = NULL;
    *n_submit = *n_cancel = 0;
    errno = ENOMEM;
    return -1;
}
