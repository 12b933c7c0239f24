/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_show.c - burst_buffer/harmonia: "scontrol show bbstat" and
 *  "scontrol show burst".
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_jobs.h"
#include "bbh_show.h"

/* One JSON value as text: numbers as numbers, objects as "k=v, k=v". */
static void _value_text(json_t *v, char **out)
{
    const char *k;
    json_t *x;
    bool first = true;

    if (json_is_string(v)) {
        xstrcat(*out, json_string_value(v));
    } else if (json_is_integer(v)) {
        xstrfmtcat(*out, "%" PRId64, (int64_t)json_integer_value(v));
    } else if (json_is_real(v)) {
        xstrfmtcat(*out, "%.3f", json_real_value(v));
    } else if (json_is_boolean(v)) {
        xstrcat(*out, json_is_true(v) ? "yes" : "no");
    } else if (json_is_object(v)) {
        json_object_foreach (v, k, x) {
            xstrfmtcat(*out, "%s%s=", first ? "" : ", ", k);
            _value_text(x, out);
            first = false;
        }
    } else if (json_is_null(v)) {
        xstrcat(*out, "-");
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            xstrcat(*out, i ? "; " : "");
            _value_text(json_array_get(v, i), out);
        }
        if (!json_array_size(v))
            xstrcat(*out, "none");
    } else {
        char *d = json_dumps(v, JSON_COMPACT);
        xstrcat(*out, d ? d : "-");
        free(d);
    }
}

/*
 * bbmgrd's GET /v1/status as "  key: value" lines, in the daemon's order.  Its
 * "caller" is slurmctld (the plugin asks as SlurmUser or root), not whoever ran
 * scontrol: that line says who asked, and through whom.
 */
static void _status_text(json_t *st, uint32_t uid, char **out)
{
    const char *k;
    json_t *v;

    json_object_foreach (st, k, v) {
        if (!xstrcmp(k, "caller") && json_is_object(v)) {
            int64_t via = json_integer_value(json_object_get(v, "uid"));
            char *name = (uid == NO_VAL) ? NULL : uid_to_string_or_null(uid);

            if (uid == NO_VAL) /* Slurm before 23.02 */
                xstrfmtcat(*out,
                           "  caller: not known (this Slurm does not tell the plugin who runs "
                           "scontrol), through slurmctld (which asks bbmgrd as uid %" PRId64 ")\n",
                           via);
            else
                xstrfmtcat(
                    *out,
                    "  caller: %s (uid %u), through slurmctld (which asks bbmgrd as uid %" PRId64
                    ")\n",
                    name ? name : "?", uid, via);
            xfree(name);
            continue;
        }
        xstrfmtcat(*out, "  %s: ", k);
        if (!xstrcmp(k, "started") && json_is_number(v)) {
            time_t t = (time_t)json_number_value(v);
            char buf[64];
            slurm_make_time_str(&t, buf, sizeof(buf));
            xstrcat(*out, buf);
        } else if (!xstrcmp(k, "uptime") && json_is_number(v)) {
            xstrfmtcat(*out, "%.0f s", json_number_value(v));
        } else {
            _value_text(v, out);
        }
        xstrcat(*out, "\n");
    }
}

/* The node agents bbmgrd reports down (status "agents": {"down": [{node,
 * reason}]}), or NULL. */
static json_t *_agents_down(json_t *status)
{
    json_t *down = json_object_get(json_object_get(status, "agents"), "down");

    return json_is_array(down) ? down : NULL;
}

/*
 * The buffer nodes out of service, from bbmgrd's GET /v1/nodes and its status:
 * drained nodes (no new allocation; their space beyond what their kept
 * allocations use is neither free nor used, so TotalSpace - FreeSpace -
 * UsedSpace of "scontrol show burst") with their reason, and nodes whose
 * agent is down.
 */
static void _nodes_text(json_t *nodes, json_t *status, char **out)
{
    json_t *list = json_object_get(nodes, "nodes"), *down = _agents_down(status);
    uint64_t drained = 0;
    int ndrained = 0, n = json_array_size(list);
    char sz[32];
    char *lines = NULL;

    for (int i = 0; i < n; i++) {
        json_t *nd = json_array_get(list, i);
        const char *reason = bbh_json_str(nd, "reason");
        uint64_t cap = json_number_value(json_object_get(nd, "capacity"));
        uint64_t used = json_number_value(json_object_get(nd, "used"));
        if (xstrcmp(bbh_json_str(nd, "state"), "drained"))
            continue;
        /* what its kept allocations use stays counted as used */
        cap = cap > used ? cap - used : 0;
        ndrained++;
        drained += cap;
        xstrfmtcat(
            lines, "    %s: drained (%s), %s out of service, %" PRId64 " allocation(s) kept\n",
            bbh_json_str(nd, "name") ? bbh_json_str(nd, "name") : "?",
            reason && reason[0] ? reason : "no reason given", hu_bb_size_str(cap, sz, sizeof(sz)),
            (int64_t)json_integer_value(json_object_get(nd, "allocations")));
    }
    for (size_t i = 0; down && i < json_array_size(down); i++) {
        json_t *d = json_array_get(down, i);
        const char *reason = bbh_json_str(d, "reason");
        xstrfmtcat(lines, "    %s: node agent down (%s)\n",
                   bbh_json_str(d, "node") ? bbh_json_str(d, "node") : "?",
                   reason && reason[0] ? reason : "no reason given");
    }
    xstrfmtcat(
        *out,
        "  buffer nodes: %d, %d up, %d drained (%s out of service), %d with their agent down\n", n,
        n - ndrained, ndrained, hu_bb_size_str(drained, sz, sizeof(sz)),
        down ? (int)json_array_size(down) : 0);
    if (lines)
        xstrcat(*out, lines);
    xfree(lines);
}

/*
 * The space of each pool, from bbmgrd's GET /v1/pools: total = free + used +
 * drained, drained being what drained nodes hold beyond what their kept
 * allocations use.  "scontrol show burst" has no field for it in Slurm's
 * fixed format: there it is TotalSpace - FreeSpace - UsedSpace.
 */
static void _pools_text(json_t *resp, char **out)
{
    json_t *pools = json_object_get(resp, "pools");
    char t[32], f[32], u[32], d[32];

    for (size_t i = 0; i < json_array_size(pools); i++) {
        json_t *p = json_array_get(pools, i);
        uint64_t cap = json_number_value(json_object_get(p, "capacity"));
        uint64_t used = json_number_value(json_object_get(p, "used"));
        uint64_t fr = json_number_value(json_object_get(p, "free"));
        uint64_t drained = cap > used + fr ? cap - used - fr : 0;

        xstrfmtcat(*out, "  pool %s: %s total = %s free + %s used + %s drained\n",
                   bbh_json_str(p, "name") ? bbh_json_str(p, "name") : "?",
                   hu_bb_size_str(cap, t, sizeof(t)), hu_bb_size_str(fr, f, sizeof(f)),
                   hu_bb_size_str(used, u, sizeof(u)), hu_bb_size_str(drained, d, sizeof(d)));
    }
}

/*
 * A job's learned figures (its "learned" in GET /v1/jobs): the number of its
 * finished phases, with w_iter ("12.1s", "-" before two) in wb and the volume
 * per phase in sz; 0 when none has finished.
 */
static int64_t _learned_figs(json_t *job, char *wb, size_t wlen, char *sz, size_t slen)
{
    json_t *l = json_object_get(job, "learned");
    json_t *w = json_object_get(l, "w_iter");
    json_t *v = json_object_get(l, "io_volume");
    int64_t n = json_integer_value(json_object_get(l, "phases"));

    if (n <= 0 || !json_is_number(v))
        return 0;
    if (json_is_number(w))
        snprintf(wb, wlen, "%.1fs", json_number_value(w));
    else
        snprintf(wb, wlen, "-");
    hu_bb_size_str((uint64_t)(json_number_value(v) + 0.5), sz, slen);
    return n;
}

/* At most this many lines of learned figures in "scontrol show bbstat". */
#define LEARNED_LINES_MAX 64

/*
 * What bbmgrd learned of each running job's I/O phases (its GET /v1/jobs, the
 * job's "learned": doc/api.md), one line per job with a finished phase:
 * "  job 42: learned: w_iter=12.1s volume=256MiB phases=4", and a line
 * "  job 42: hold: REASON" for a job whose I/O phases bbmgrd holds
 * (capacity.over: hold, doc/security.md, Capacity).  With PrivateData
 * of burst buffers, a user sees only their own jobs (as "scontrol show burst"),
 * and none when this Slurm does not say who asks.
 */
static void _learned_text(json_t *resp, uint32_t uid, char **out)
{
    json_t *jobs = json_object_get(resp, "jobs");
    bool private;
    int shown = 0, more = 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    private = (bb_state.bb_config.flags & BB_FLAG_PRIVATE_DATA)
              && (uid == NO_VAL || !validate_operator(uid));
    slurm_mutex_unlock(&bb_state.bb_mutex);
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *j = json_array_get(jobs, i);
        const char *hold = bbh_json_str(j, "hold");
        char sz[32], wb[32];
        int64_t n = _learned_figs(j, wb, sizeof(wb), sz, sizeof(sz));

        if (private && (uid == NO_VAL || json_integer_value(json_object_get(j, "uid")) != uid))
            continue;
        /* its I/O phases held (capacity.over: hold): why */
        if (hold && shown < LEARNED_LINES_MAX) {
            xstrfmtcat(*out, "  job %s: hold: %s\n",
                       bbh_json_str(j, "id") ? bbh_json_str(j, "id") : "?", hold);
            shown++;
        }
        if (!n)
            continue;
        if (shown == LEARNED_LINES_MAX) {
            more++;
            continue;
        }
        xstrfmtcat(*out, "  job %s: learned: w_iter=%s volume=%s phases=%" PRId64 "\n",
                   bbh_json_str(j, "id") ? bbh_json_str(j, "id") : "?", wb, sz, n);
        shown++;
    }
    if (more)
        xstrfmtcat(*out, "  (%d more jobs with learned figures: bbmgr jobs)\n", more);
}

/* "scontrol show bbstat": bbmgrd's status (bounded wait, no lock held). */
extern char *bb_p_get_status(uint32_t argc, char **argv, uint32_t uid, uint32_t gid)
{
    char *out = NULL, *text = NULL;
    int njobs = 0, nwait = 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    for (int i = 0; i < HJOB_HASH; i++)
        for (hjob_t *h = hjobs[i]; h; h = h->next) {
            njobs++;
            if (h->want != WANT_NOTHING)
                nwait++;
        }
    slurm_mutex_unlock(&bb_state.bb_mutex);
    xstrfmtcat(out,
               "Harmonia burst buffer plugin\n"
               "  jobs followed: %d (%d with work under way)\n",
               njobs, nwait);
    if (!conf.configured) {
        xstrcat(out, "  manager daemon: not configured (no harmonia.conf)\n");
        return out;
    }
    xstrfmtcat(out, "  manager daemon: %s\n", conf.url);
    hm_client_t *cli = bbh_client(2);
    hm_error_t err;
    int st = cli ? hm_request_text(cli, "GET", "/v1/status", NULL, &text, &err) : -1;
    if (st == 200 && text) {
        json_t *j = json_loads(text, 0, NULL);
        char *ntext = NULL;
        if (json_is_object(j))
            _status_text(j, uid, &out);
        else
            xstrfmtcat(out, "  %s\n", text);
        if (hm_request_text(cli, "GET", "/v1/nodes", NULL, &ntext, &err) == 200 && ntext) {
            json_t *nodes = json_loads(ntext, 0, NULL);
            if (json_is_object(nodes))
                _nodes_text(nodes, j, &out);
            json_decref(nodes);
        }
        free(ntext);
        ntext = NULL;
        if (hm_request_text(cli, "GET", "/v1/pools", NULL, &ntext, &err) == 200 && ntext) {
            json_t *pools = json_loads(ntext, 0, NULL);
            _pools_text(pools, &out);
            json_decref(pools);
        }
        free(ntext);
        ntext = NULL;
        if (hm_request_text(cli, "GET", "/v1/jobs?state=running", NULL, &ntext, &err) == 200
            && ntext) {
            json_t *jobs = json_loads(ntext, 0, NULL);
            _learned_text(jobs, uid, &out);
            json_decref(jobs);
        }
        free(ntext);
        json_decref(j);
    } else if (st < 0) {
        xstrfmtcat(out, "  bbmgrd unreachable: %s\n", cli ? err.text : "no client");
    } else {
        xstrfmtcat(out, "  bbmgrd answered %d: %s\n", st, text ? text : "");
    }
    free(text);
    hm_client_destroy(cli);
    return out;
}

/*
 * Take bbmgrd's GET /v1/jobs?state=running answer (the agent asks for it, no
 * lock held) as what "scontrol show burst" shows of each job's learned
 * figures: hjob->learned, "LearnedWIter=12.1s LearnedVolume=256MiB
 * LearnedPhases=4" (w_iter "-" before two phases), NULL before the first
 * phase ends.  A job no longer in the answer keeps its last figures.
 */
extern void bbh_learned_apply(json_t *resp)
{
    json_t *jobs = json_object_get(resp, "jobs");

    if (!json_is_array(jobs))
        return;
    slurm_mutex_lock(&bb_state.bb_mutex);
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *j = json_array_get(jobs, i);
        const char *id = bbh_json_str(j, "id");
        char *end = NULL, sz[32], wb[32];
        int64_t n = _learned_figs(j, wb, sizeof(wb), sz, sizeof(sz));
        unsigned long job_id;
        hjob_t *h;

        if (!id || !n)
            continue;
        job_id = strtoul(id, &end, 10);
        if (!end || *end || !job_id || job_id > UINT32_MAX || !(h = bbh_hjob_find(job_id)))
            continue;
        xfree(h->learned);
        h->learned =
            xstrdup_printf("LearnedWIter=%s LearnedVolume=%s LearnedPhases=%" PRId64, wb, sz, n);
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
}

/*
 * Slurm's fixed format has no field for a job's learned figures: they follow
 * the Pool of the job's buffer ("Pool=nvme LearnedWIter=2.0s ..."), the pool
 * of each record being swapped for the packing only.  bb_mutex held.
 */
static void _learned_pools(bool restore, char ***saved, int *nsaved)
{
    int k = 0;

    if (!restore)
        *nsaved = 0;
    for (int i = 0; i < BB_HASH_SIZE; i++)
        for (bb_alloc_t *a = bb_state.bb_ahash[i]; a; a = a->next) {
            hjob_t *h = a->job_id ? bbh_hjob_find(a->job_id) : NULL;

            if (!h || !h->learned)
                continue;
            if (restore) {
                xfree(a->pool);
                a->pool = (*saved)[k++];
                continue;
            }
            xrecalloc(*saved, *nsaved + 1, sizeof(char *));
            (*saved)[(*nsaved)++] = a->pool;
            a->pool = xstrdup_printf("%s %s", a->pool ? a->pool : "-", h->learned);
        }
    if (restore)
        xfree(*saved);
}

extern int bb_p_state_pack(uid_t uid, buf_t *buffer, uint16_t protocol_version)
{
    char **saved = NULL;
    int nsaved = 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    packstr(bb_state.name, buffer);
    bb_pack_state(&bb_state, buffer, protocol_version);
    if (((bb_state.bb_config.flags & BB_FLAG_PRIVATE_DATA) == 0) || validate_operator(uid))
        uid = 0; /* User can see all data */
    _learned_pools(false, &saved, &nsaved);
    (void)bb_pack_bufs(uid, &bb_state, buffer, protocol_version);
    _learned_pools(true, &saved, &nsaved);
    (void)bb_pack_usage(uid, &bb_state, buffer, protocol_version);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}
