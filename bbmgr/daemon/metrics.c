/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics.c — Prometheus exposition of bbmgrd's counters and gauges.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "core.h"
#include "nodes.h"

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} sb_t;

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sb_t *b, const char *fmt, ...)
{
    va_list ap;
    if (b->oom)
        return;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)(n > 0 ? n : 0) + 256;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->oom = true;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
}

static void head(sb_t *b, const char *name, const char *type, const char *help)
{
    sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void histogram(sb_t *b, const char *name, const char *help, const double *bounds, int nb,
                      const uint64_t *counts, double sum, uint64_t total)
{
    uint64_t cum = 0;
    head(b, name, "histogram", help);
    for (int i = 0; i < nb; i++) {
        cum += counts[i];
        sb_printf(b, "%s_bucket{le=\"%g\"} %ju\n", name, bounds[i], (uintmax_t)cum);
    }
    cum += counts[nb];
    sb_printf(b, "%s_bucket{le=\"+Inf\"} %ju\n", name, (uintmax_t)cum);
    sb_printf(b, "%s_sum %.9f\n%s_count %ju\n", name, sum, name, (uintmax_t)total);
}

static void mover_job(const char *job, double weight, uint64_t bytes, int transfers, void *arg)
{
    sb_t *b = arg;
    (void)transfers;
    sb_printf(b, "harmonia_mover_job_bytes_total{job=\"%s\"} %ju\n", job, (uintmax_t)bytes);
}

static void mover_job_weight(const char *job, double weight, uint64_t bytes, int transfers,
                             void *arg)
{
    sb_t *b = arg;
    (void)bytes;
    (void)transfers;
    sb_printf(b, "harmonia_mover_job_weight{job=\"%s\"} %.9g\n", job, weight);
}

/* Transfers and the data mover (core lock held). */
static void mover_metrics(sb_t *b, core_t *c)
{
    int queued = 0, running = 0;
    void *v;
    for (void *it = hmap_first(c->xfers, &v); it; it = hmap_next(c->xfers, it, &v))
        ((xfer_t *)v)->state == XF_RUNNING ? running++ : queued++;
    head(b, "harmonia_transfers", "gauge", "Open stage-in/out transfers, by state.");
    sb_printf(b, "harmonia_transfers{state=\"queued\"} %d\n", queued);
    sb_printf(b, "harmonia_transfers{state=\"running\"} %d\n", running);
    if (!c->mover)
        return;
    mover_stats_t ms;
    nodes_moved_t ag; /* the agents' movers: counted with bbmgrd's own */
    mover_get_stats(c->mover, &ms);
    nodes_moved(c, &ag);
    ms.done += ag.done;
    ms.failed += ag.failed;
    ms.cancelled += ag.cancelled;
    ms.bytes += ag.bytes;
    head(b, "harmonia_mover_transfers_total", "counter",
         "Transfers finished by the mover since start (bbmgrd's and the agents'), by outcome.");
    sb_printf(b, "harmonia_mover_transfers_total{outcome=\"done\"} %ju\n", (uintmax_t)ms.done);
    sb_printf(b, "harmonia_mover_transfers_total{outcome=\"failed\"} %ju\n", (uintmax_t)ms.failed);
    sb_printf(b, "harmonia_mover_transfers_total{outcome=\"cancelled\"} %ju\n",
              (uintmax_t)ms.cancelled);
    head(b, "harmonia_mover_bytes_total", "counter",
         "Bytes copied by the mover (bbmgrd's and the buffer-node agents').");
    sb_printf(b, "harmonia_mover_bytes_total %ju\n", (uintmax_t)ms.bytes);
    head(b, "harmonia_mover_files_total", "counter",
         "Files copied, verified and renamed into place.");
    sb_printf(b, "harmonia_mover_files_total %ju\n", (uintmax_t)ms.files);
    head(b, "harmonia_mover_requests_total", "counter",
         "SFQ(D)+ copy requests (chunks) completed.");
    sb_printf(b, "harmonia_mover_requests_total %ju\n", (uintmax_t)ms.chunks);
    head(b, "harmonia_mover_backfills_total", "counter",
         "Chunks dispatched by SFQ(D)+ backfill ahead of a head that did not fit.");
    sb_printf(b, "harmonia_mover_backfills_total %ju\n", (uintmax_t)ms.backfills);
    head(b, "harmonia_mover_busy_threads", "gauge",
         "Mover worker threads busy (of mover.threads).");
    sb_printf(b, "harmonia_mover_busy_threads %d\n", ms.busy);
    head(b, "harmonia_mover_job_bytes_total", "counter",
         "Bytes served to each job by the mover (SFQ(D)+ flow).");
    mover_foreach_job(c->mover, mover_job, b);
    head(b, "harmonia_mover_job_weight", "gauge", "SFQ(D)+ weight of each job (from the policy).");
    mover_foreach_job(c->mover, mover_job_weight, b);
}

char *metrics_render(const api_counters_t *ac, core_t *c, state_t *st)
{
    static const double dec_b[] = { 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                    1e-3, 2.5e-3, 5e-3, 1e-2, 1e-1 };
    static const double lat_b[] = {
        1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1, 10
    };
    sb_t b = { 0 };
    state_stats_t ss;

    if (!(b.buf = malloc(b.cap = 16384)))
        return NULL;
    b.buf[0] = '\0';
    state_get_stats(st, &ss);

    core_lock(c);
    int reg = 0, run = 0, waiting = 0, granted = 0;
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
        ((job_t *)v)->state == JOB_RUNNING ? run++ : reg++;
    for (void *it = hmap_first(c->phases, &v); it; it = hmap_next(c->phases, it, &v))
        ((phase_t *)v)->state == PH_GRANTED ? granted++ : waiting++;

    head(&b, "harmonia_jobs", "gauge", "Jobs known to bbmgrd, by state.");
    sb_printf(&b, "harmonia_jobs{state=\"registered\"} %d\n", reg);
    sb_printf(&b, "harmonia_jobs{state=\"running\"} %d\n", run);
    head(&b, "harmonia_phases", "gauge", "Open I/O phases, by state.");
    sb_printf(&b, "harmonia_phases{state=\"waiting\"} %d\n", waiting);
    sb_printf(&b, "harmonia_phases{state=\"granted\"} %d\n", granted);
    head(&b, "harmonia_phases_total", "counter", "I/O phases since start, by outcome.");
    sb_printf(&b, "harmonia_phases_total{event=\"requested\"} %ju\n", (uintmax_t)c->n_requested);
    sb_printf(&b, "harmonia_phases_total{event=\"granted\"} %ju\n", (uintmax_t)c->n_granted);
    sb_printf(&b, "harmonia_phases_total{event=\"finished\"} %ju\n", (uintmax_t)c->n_finished);
    sb_printf(&b, "harmonia_phases_total{event=\"expired\"} %ju\n", (uintmax_t)c->n_expired);
    head(&b, "harmonia_phase_bytes_total", "counter", "Bytes of finished phases.");
    sb_printf(&b, "harmonia_phase_bytes_total %.0f\n", c->bytes_finished);
    head(&b, "harmonia_stall_seconds_total", "counter",
         "Seconds phases waited between request and grant.");
    sb_printf(&b, "harmonia_stall_seconds_total %.6f\n", c->stall_seconds);
    head(&b, "harmonia_persistent_buffers", "gauge", "Persistent buffers.");
    sb_printf(&b, "harmonia_persistent_buffers %zu\n", hmap_size(c->pbufs));
    head(&b, "harmonia_transfers_open", "gauge", "Stage-in/out transfers not finished.");
    sb_printf(&b, "harmonia_transfers_open %zu\n", hmap_size(c->xfers));

    core_node_loads(c);
    head(&b, "harmonia_node_capacity_bytes", "gauge", "Capacity of each buffer node.");
    for (int i = 0; i < c->nnodes; i++)
        sb_printf(&b, "harmonia_node_capacity_bytes{node=\"%s\",pool=\"%s\"} %ju\n",
                  c->nodes[i].name, c->pools[c->nodes[i].pool].name,
                  (uintmax_t)c->nodes[i].capacity);
    head(&b, "harmonia_node_used_bytes", "gauge", "Allocated bytes on each buffer node.");
    for (int i = 0; i < c->nnodes; i++)
        sb_printf(&b, "harmonia_node_used_bytes{node=\"%s\"} %ju\n", c->nodes[i].name,
                  (uintmax_t)c->nodes[i].used);
    head(&b, "harmonia_node_active_phases", "gauge", "Granted phases on each buffer node.");
    for (int i = 0; i < c->nnodes; i++)
        sb_printf(&b, "harmonia_node_active_phases{node=\"%s\"} %d\n", c->nodes[i].name,
                  c->nodes[i].active);
    head(&b, "harmonia_node_load_bytes_per_second", "gauge",
         "Bandwidth granted to phases on each buffer node.");
    for (int i = 0; i < c->nnodes; i++)
        sb_printf(&b, "harmonia_node_load_bytes_per_second{node=\"%s\"} %.0f\n", c->nodes[i].name,
                  c->nodes[i].load);
    head(&b, "harmonia_node_drained", "gauge", "1 if the node is drained.");
    for (int i = 0; i < c->nnodes; i++)
        sb_printf(&b, "harmonia_node_drained{node=\"%s\"} %d\n", c->nodes[i].name,
                  c->nodes[i].drained ? 1 : 0);
    mover_metrics(&b, c);
    char *agents = nodes_metrics(c); /* buffer-node agents (none: NULL) */
    if (agents)
        sb_printf(&b, "%s", agents);
    free(agents);
    histogram(&b, "harmonia_decision_seconds", "Time of one scheduling decision.", dec_b, 11,
              c->dec_hist, c->dec_sum, c->decisions);
    head(&b, "harmonia_decisions_deferred_total", "counter",
         "Events whose decision was folded into a later one (nothing could be granted).");
    sb_printf(&b, "harmonia_decisions_deferred_total %ju\n", (uintmax_t)c->decisions_deferred);
    head(&b, "harmonia_decision_budget_hits_total", "counter",
         "Decisions whose schedule stopped at the decision budget (the policy ran the "
         "best one found).");
    sb_printf(&b, "harmonia_decision_budget_hits_total %ju\n", (uintmax_t)c->budget_hits);
    head(&b, "harmonia_starvation_bound_hits_total", "counter",
         "Phases that waited past the starvation bound (policy.starve_factor, "
         "policy.starve_floor) and were given a share whatever the policy decided.");
    sb_printf(&b, "harmonia_starvation_bound_hits_total %ju\n", (uintmax_t)c->bound_hits);
    sb_printf(&b,
              "# HELP harmonia_policy_info Current policy.\n# TYPE harmonia_policy_info gauge\n"
              "harmonia_policy_info{policy=\"%s\"} 1\n",
              c->policy_id);
    {
        hs_auto_state_t as;
        bool on = hs_sched_auto_state(c->sched, &as) == 0 && as.active;
        if (on)
            sb_printf(&b,
                      "# HELP harmonia_policy_auto_info Policy auto runs now.\n"
                      "# TYPE harmonia_policy_auto_info gauge\n"
                      "harmonia_policy_auto_info{current=\"%s\"} 1\n"
                      "# HELP harmonia_policy_auto_epochs_total Decision epochs of auto.\n"
                      "# TYPE harmonia_policy_auto_epochs_total counter\n"
                      "harmonia_policy_auto_epochs_total %ju\n"
                      "# HELP harmonia_policy_auto_switches_total Policy switches of auto.\n"
                      "# TYPE harmonia_policy_auto_switches_total counter\n"
                      "harmonia_policy_auto_switches_total %ju\n",
                      as.current, (uintmax_t)as.epochs, (uintmax_t)as.switches);
        if (on) {
            head(&b, "harmonia_policy_auto_lookahead_checked_total", "counter",
                 "Jobs that ended as auto's look ahead projected them under the policy it "
                 "ran (doc/policies.md, \"auto\").");
            sb_printf(&b, "harmonia_policy_auto_lookahead_checked_total %ju\n",
                      (uintmax_t)as.lookahead_checked);
            head(&b, "harmonia_policy_auto_lookahead_error_max", "gauge",
                 "Largest error of those projections: |end - projected end| / the time "
                 "left at the projection.");
            sb_printf(&b, "harmonia_policy_auto_lookahead_error_max %.9g\n", as.lookahead_err_max);
        }
    }
    core_unlock(c);

    head(&b, "harmonia_api_requests_total", "counter", "API requests answered, by HTTP code.");
    for (int code = 100; code < 600; code++)
        if (ac->by_code[code])
            sb_printf(&b, "harmonia_api_requests_total{code=\"%d\"} %ju\n", code,
                      (uintmax_t)ac->by_code[code]);
    histogram(&b, "harmonia_api_request_seconds", "API request latency (commit included).", lat_b,
              11, ac->lat_hist, ac->lat_sum, ac->lat_count);
    head(&b, "harmonia_api_auth_total", "counter",
         "Requests authenticated (or refused), by scheme: a MUNGE credential decoded by "
         "munged, or a connection's session token.");
    sb_printf(&b, "harmonia_api_auth_total{scheme=\"munge\"} %ju\n", (uintmax_t)ac->auth_munge);
    sb_printf(&b, "harmonia_api_auth_total{scheme=\"session\"} %ju\n", (uintmax_t)ac->auth_session);
    head(&b, "harmonia_api_auth_failures_total", "counter", "Requests refused with 401.");
    sb_printf(&b, "harmonia_api_auth_failures_total %ju\n", (uintmax_t)ac->auth_failures);
    head(&b, "harmonia_api_sessions_opened_total", "counter",
         "Connection-bound sessions opened (or renewed).");
    sb_printf(&b, "harmonia_api_sessions_opened_total %ju\n", (uintmax_t)ac->sessions_opened);
    head(&b, "harmonia_api_batch_items_total", "counter",
         "Requests run as items of POST /v1/batch (the batch itself is one request).");
    sb_printf(&b, "harmonia_api_batch_items_total %ju\n", (uintmax_t)ac->batch_items);
    head(&b, "harmonia_api_waiting_connections", "gauge",
         "Connections suspended for a commit or a long-poll.");
    sb_printf(&b, "harmonia_api_waiting_connections %ju\n", (uintmax_t)ac->waiters);
    head(&b, "harmonia_state_commits_total", "counter", "SQLite transactions committed.");
    sb_printf(&b, "harmonia_state_commits_total %ju\n", (uintmax_t)ss.commits);
    head(&b, "harmonia_state_statements_total", "counter", "Rows written.");
    sb_printf(&b, "harmonia_state_statements_total %ju\n", (uintmax_t)ss.statements);
    head(&b, "harmonia_state_commit_seconds_total", "counter", "Time spent in COMMIT (fsync).");
    sb_printf(&b, "harmonia_state_commit_seconds_total %.6f\n", ss.commit_seconds);
    head(&b, "harmonia_state_checkpoints_total", "counter",
         "WAL checkpoints run by the writer between commits.");
    sb_printf(&b, "harmonia_state_checkpoints_total %ju\n", (uintmax_t)ss.checkpoints);
    head(&b, "harmonia_state_checkpoint_seconds_total", "counter",
         "Time spent in the writer's WAL checkpoints.");
    sb_printf(&b, "harmonia_state_checkpoint_seconds_total %.6f\n", ss.checkpoint_seconds);
    if (b.oom) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}
