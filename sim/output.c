/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * output.c — bbsim's results as a terminal table, JSON (doc/design.md §5, a contract)
 * or CSV.
 *
 * JSON: one object { "workload", "seed", "platform", "results": [ ... ] } with one
 * entry per policy holding policy, sys_efficiency, upper_limit, dilation,
 * stretch_max, utilization, io_slowdown_mean, fairness, stall_time,
 * buffer_efficiency (null without buffers), makespan, events, and "apps" (one entry
 * per simulated job).  Ratios are fractions (0.85, not 85); times are seconds.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static bool is_periodic(hs_policy_kind_t k)
{
    return k == HS_POL_PERIODIC_THROU || k == HS_POL_PERIODIC_CONG || k == HS_POL_PERSCHED;
}

static json_t *app_json(const sim_result_t *r, int i)
{
    const hs_job_stats_t *st = &r->stats[i];
    const hs_app_metrics_t *am = &r->app[i];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", json_string(r->names[i]));
    json_object_set_new(o, "nodes", json_integer(st->nodes));
    json_object_set_new(o, "release", num(st->release));
    json_object_set_new(o, "end", num(st->end));
    json_object_set_new(o, "phases", json_integer(st->phases));
    json_object_set_new(o, "work", num(st->work));
    json_object_set_new(o, "io_time", num(st->io_time));
    json_object_set_new(o, "io_dedicated", num(st->io_dedicated));
    json_object_set_new(o, "io_wait", num(st->io_wait));
    json_object_set_new(o, "bytes", num(st->bytes));
    json_object_set_new(o, "w_iter", num(st->w_iter_est));
    json_object_set_new(o, "rho", num(am->rho));
    json_object_set_new(o, "rho_tilde", num(am->rho_tilde));
    json_object_set_new(o, "dilation", num(am->dilation));
    json_object_set_new(o, "stretch", num(am->stretch));
    json_object_set_new(o, "io_slowdown", num(am->io_slowdown));
    json_object_set_new(o, "stall_time", num(am->stall));
    if (r->has_buffers) {
        json_object_set_new(o, "buffer_nodes", json_integer(r->nalloc[i]));
        json_object_set_new(o, "if_mean", num(st->phases > 0 ? st->if_sum / st->phases : NAN));
        json_object_set_new(o, "if_max", num(st->phases > 0 ? st->if_max : NAN));
        json_object_set_new(o, "buffer_full_time", num(st->buffer_full));
        json_object_set_new(o, "alloc_wait", num(st->alloc_wait));
        json_object_set_new(o, "buffer_efficiency",
                            num(st->buf_alloc > 0 ? st->buf_held / st->buf_alloc : NAN));
    }
    return o;
}

static json_t *devices_json(const sim_result_t *r)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    for (int k = 0; k < r->ndevs; k++) {
        const sim_dev_t *d = &r->devs[k];
        json_t *o = json_pack(
            "{s:s, s:s, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "name", d->name,
            "device", d->device, "capacity", num(d->st.capacity), "concurrency_mean",
            num(d->st.concurrency_mean), "concurrency_max", d->st.concurrency_max, "busy_time",
            num(d->st.busy), "bytes_written", num(d->st.written), "bytes_read", num(d->st.read),
            "bytes_drained", num(d->st.drained), "occupancy_max", num(d->st.occupancy_max),
            "occupancy_end", num(d->st.occupancy), "full_time", num(d->st.full_time));
        if (json_array_append_new(a, o) < 0) { /* o NULL: out of memory */
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *result_json(const sim_result_t *r)
{
    json_t *o = json_object();
    json_t *apps = json_array();
    if (!o || !apps) {
        json_decref(o);
        json_decref(apps);
        return NULL;
    }
    json_object_set_new(o, "policy", json_string(r->policy));
    json_object_set_new(o, "sys_efficiency", num(r->m.sys_efficiency));
    json_object_set_new(o, "upper_limit", num(r->m.upper_limit));
    json_object_set_new(o, "dilation", num(r->m.dilation));
    json_object_set_new(o, "stretch_max", num(r->m.stretch_max));
    json_object_set_new(o, "stretch_mean", num(r->m.stretch_mean));
    json_object_set_new(o, "utilization", num(r->m.utilization));
    json_object_set_new(o, "io_slowdown_mean", num(r->m.io_slowdown_mean));
    json_object_set_new(o, "fairness", num(r->m.fairness));
    json_object_set_new(o, "stall_time", num(r->m.stall_time));
    json_object_set_new(o, "buffer_efficiency",
                        r->has_buffers ? num(r->buffer_efficiency) : json_null());
    json_object_set_new(o, "makespan", num(r->m.makespan));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "decisions", json_integer((json_int_t)r->decisions));
    json_object_set_new(o, "wall_seconds", num(r->wall));
    json_object_set_new(o, "decision_max_s", num(r->decide_wall_max));
    /* only when some phase reached its bound: the papers' runs never do, and
     * their JSON stays as published (doc/policies.md, "Starvation bound") */
    if (r->bound_hits > 0)
        json_object_set_new(o, "starvation_bound_hits", json_integer((json_int_t)r->bound_hits));
    if (r->auto_st.active) {
        const hs_auto_state_t *a = &r->auto_st;
        json_object_set_new(o, "auto_policy", json_string(a->current));
        json_object_set_new(o, "auto_reason", json_string(a->reason));
        json_object_set_new(o, "auto_epochs", json_integer((json_int_t)a->epochs));
        json_object_set_new(o, "auto_switches", json_integer((json_int_t)a->switches));
        json_object_set_new(o, "auto_epoch_s_mean",
                            num(a->epochs ? r->auto_wall / (double)a->epochs : 0.));
        json_object_set_new(o, "auto_epoch_s_max", num(r->auto_wall_max));
        json_object_set_new(o, "auto_lookahead_checked",
                            json_integer((json_int_t)a->lookahead_checked));
        json_object_set_new(o, "auto_lookahead_error_max",
                            a->lookahead_checked ? num(a->lookahead_err_max) : json_null());
        json_object_set_new(o, "auto_lookahead_error_mean",
                            a->lookahead_checked
                                ? num(a->lookahead_err_sum / (double)a->lookahead_checked)
                                : json_null());
    }
    if (r->pstats.plans) {
        const hs_policy_stats_t *ps = &r->pstats;
        json_object_set_new(o, "schedules", json_integer((json_int_t)ps->schedules));
        json_object_set_new(o, "schedule_work", num(ps->work));
        json_object_set_new(o, "schedule_compute_s", num(r->sched_wall));
        json_object_set_new(o, "schedule_compute_max_s", num(r->sched_wall_max));
        json_object_set_new(o, "budget_hits", json_integer((json_int_t)ps->budget_hits));
        if (is_periodic(r->kind)) {
            json_object_set_new(o, "period", num(ps->period));
            json_object_set_new(o, "period_min", num(ps->period_tmin));
            json_object_set_new(o, "period_jobs", json_integer(ps->period_jobs));
            json_object_set_new(o, "period_unscheduled", json_integer(ps->period_unscheduled));
            json_object_set_new(o, "period_sys_efficiency", num(ps->period_sys_efficiency));
            json_object_set_new(o, "period_dilation", num(ps->period_dilation));
        } else {
            json_object_set_new(o, "dp_exact", json_integer((json_int_t)ps->exact));
            json_object_set_new(o, "dp_held_back", json_integer((json_int_t)ps->held_back));
            json_object_set_new(o, "dp_max_phases", json_integer(ps->max_phases));
            json_object_set_new(
                o, "dp_decision_s_mean",
                num(ps->schedules > 0 ? r->sched_wall / (double)ps->schedules : NAN));
        }
    }
    if (r->has_buffers) {
        json_t *d = devices_json(r);
        json_object_set_new(o, "over_provisioning", num(r->overprovision));
        json_object_set_new(o, "if_mean", num(r->if_mean));
        json_object_set_new(o, "if_max", num(r->if_max));
        json_object_set_new(o, "buffer_full_time", num(r->buffer_full));
        json_object_set_new(o, "alloc_wait", num(r->alloc_wait));
        if (!d) {
            json_decref(o);
            json_decref(apps);
            return NULL;
        }
        json_object_set_new(o, "devices", d);
    }
    for (int i = 0; i < r->napps; i++) {
        json_t *a = app_json(r, i);
        if (!a || json_array_append_new(apps, a) < 0) {
            json_decref(o);
            json_decref(apps);
            return NULL;
        }
    }
    json_object_set_new(o, "apps", apps);
    return o;
}

static int out_json(FILE *f, const wl_t *wl, uint64_t seed, const sim_result_t *res, int nres)
{
    json_t *root = json_object();
    json_t *arr = json_array();
    json_t *plat = json_object();
    int rc = -1;

    if (!root || !arr || !plat)
        goto done;
    json_object_set_new(root, "workload", json_string(wl->file));
    json_object_set_new(root, "seed", json_integer((json_int_t)seed));
    json_object_set_new(plat, "nodes", json_integer(wl->plat.nodes));
    json_object_set_new(plat, "node_bandwidth", num(wl->plat.node_bw));
    json_object_set_new(plat, "bandwidth", num(wl->plat.bw));
    if (wl->plat.nbnodes > 0)
        json_object_set_new(plat, "buffers", json_integer(wl->plat.nbnodes));
    json_object_set_new(root, "platform", plat);
    plat = NULL;
    for (int i = 0; i < nres; i++) {
        json_t *r = result_json(&res[i]);
        if (!r || json_array_append_new(arr, r) < 0)
            goto done;
    }
    json_object_set_new(root, "results", arr);
    arr = NULL;
    if (json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) < 0)
        goto done;
    fputc('\n', f);
    rc = 0;
done:
    json_decref(plat);
    json_decref(arr);
    json_decref(root);
    if (rc < 0)
        errno = ENOMEM;
    return rc;
}

static void csv_field(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, ",%.10g", v);
    else
        fputc(',', f);
}

static int out_csv(FILE *f, const sim_result_t *res, int nres)
{
    fprintf(f, "policy,sys_efficiency,upper_limit,dilation,stretch_max,"
               "utilization,io_slowdown_mean,fairness,stall_time,buffer_efficiency,"
               "makespan,events\n");
    for (int i = 0; i < nres; i++) {
        const sim_result_t *r = &res[i];
        fprintf(f, "%s", r->policy);
        csv_field(f, r->m.sys_efficiency);
        csv_field(f, r->m.upper_limit);
        csv_field(f, r->m.dilation);
        csv_field(f, r->m.stretch_max);
        csv_field(f, r->m.utilization);
        csv_field(f, r->m.io_slowdown_mean);
        csv_field(f, r->m.fairness);
        csv_field(f, r->m.stall_time);
        csv_field(f, r->has_buffers ? r->buffer_efficiency : NAN);
        csv_field(f, r->m.makespan);
        fprintf(f, ",%llu\n", (unsigned long long)r->events);
    }
    return 0;
}

static void cell(FILE *f, int width, double v, const char *fmt)
{
    char b[64];
    if (isfinite(v))
        snprintf(b, sizeof(b), fmt, v);
    else
        snprintf(b, sizeof(b), "-");
    fprintf(f, " %*s", width, b);
}

static int out_table(FILE *f, const wl_t *wl, uint64_t seed, const sim_result_t *res, int nres)
{
    int pw = 10;
    long njobs = 0;

    for (int i = 0; i < nres; i++) {
        int l = (int)strlen(res[i].policy);
        if (l > pw)
            pw = l;
    }
    if (nres > 0)
        njobs = res[0].napps;
    fprintf(f, "%s: %ld jobs on %d nodes, B = %.4g GB/s, b = %.4g GB/s, seed %llu\n", wl->file,
            njobs, wl->plat.nodes, wl->plat.bw / 1e9, wl->plat.node_bw / 1e9,
            (unsigned long long)seed);
    fprintf(f, "%-*s %8s %8s %9s %9s %8s %9s %8s %11s %11s %9s\n", pw, "policy", "SysEff%",
            "Upper%", "Dilation", "StretchMx", "Util%", "IOslowdn", "Fairness", "Stall(s)",
            "Makespan(s)", "Events");
    for (int i = 0; i < nres; i++) {
        const sim_result_t *r = &res[i];
        fprintf(f, "%-*s", pw, r->policy);
        cell(f, 8, 100. * r->m.sys_efficiency, "%.2f");
        cell(f, 8, 100. * r->m.upper_limit, "%.2f");
        cell(f, 9, r->m.dilation, "%.3f");
        cell(f, 9, r->m.stretch_max, "%.3f");
        cell(f, 8, 100. * r->m.utilization, "%.2f");
        cell(f, 9, r->m.io_slowdown_mean, "%.3f");
        cell(f, 8, r->m.fairness, "%.4f");
        cell(f, 11, r->m.stall_time, "%.1f");
        cell(f, 11, r->m.makespan, "%.1f");
        fprintf(f, " %9llu\n", (unsigned long long)r->events);
    }
    for (int i = 0; i < nres; i++) {
        if (res[i].bound_hits > 0)
            fprintf(f,
                    "%s: %llu phases waited past their bound and were given a "
                    "share (doc/policies.md, \"Starvation bound\")\n",
                    res[i].policy, (unsigned long long)res[i].bound_hits);
    }
    for (int i = 0; i < nres; i++) {
        const sim_result_t *r = &res[i];
        const hs_auto_state_t *a = &r->auto_st;
        if (a->active)
            fprintf(f,
                    "%s: %llu epochs, %llu switches, ends with %s (mean %.3g ms, "
                    "longest %.3g ms per epoch); last: %s\n",
                    r->policy, (unsigned long long)a->epochs, (unsigned long long)a->switches,
                    a->current, a->epochs ? 1e3 * r->auto_wall / (double)a->epochs : 0.,
                    1e3 * r->auto_wall_max, a->reason);
        if (a->active && a->lookahead_checked)
            fprintf(f,
                    "%s: look ahead against the run: %llu job ends checked, error max "
                    "%.3g, mean %.3g (|end - projected| / time left at the projection)\n",
                    r->policy, (unsigned long long)a->lookahead_checked, a->lookahead_err_max,
                    a->lookahead_err_sum / (double)a->lookahead_checked);
    }
    for (int i = 0; i < nres; i++) {
        const sim_result_t *r = &res[i];
        const hs_policy_stats_t *ps = &r->pstats;
        if (!ps->plans)
            continue;
        if (is_periodic(r->kind))
            fprintf(f,
                    "%s: period %.6g s (T_min %.6g s, %d jobs, %d without an "
                    "instance; pattern SysEff %.2f%%, Dilation %.3f); %llu patterns "
                    "computed in %.3g s (longest %.3g s)\n",
                    r->policy, ps->period, ps->period_tmin, ps->period_jobs, ps->period_unscheduled,
                    100 * ps->period_sys_efficiency, ps->period_dilation,
                    (unsigned long long)ps->schedules, r->sched_wall, r->sched_wall_max);
        else
            fprintf(f,
                    "%s: %llu DP placements (%llu exact, up to %d phases, %llu "
                    "held back for capacity) in %.3g s (mean %.3g ms, longest "
                    "%.3g ms)\n",
                    r->policy, (unsigned long long)ps->schedules, (unsigned long long)ps->exact,
                    ps->max_phases, (unsigned long long)ps->held_back, r->sched_wall,
                    ps->schedules ? 1e3 * r->sched_wall / (double)ps->schedules : 0.,
                    1e3 * r->sched_wall_max);
    }
    if (nres > 0 && !res[0].has_buffers)
        fprintf(f, "(no buffer tier: buffer efficiency not applicable)\n");
    if (nres > 0 && res[0].has_buffers) {
        fprintf(f, "\nburst buffers: %d nodes\n", res[0].ndevs);
        fprintf(f, "%-*s %8s %8s %8s %11s %11s %8s %9s\n", pw, "policy", "BufEff%", "If mean",
                "If max", "BufFull(s)", "AllocWt(s)", "OverProv", "Conc mean");
        for (int i = 0; i < nres; i++) {
            const sim_result_t *r = &res[i];
            double ci = 0, busy = 0;
            for (int k = 0; k < r->ndevs; k++) {
                ci += r->devs[k].st.concurrency_mean * r->devs[k].st.busy;
                busy += r->devs[k].st.busy;
            }
            fprintf(f, "%-*s", pw, r->policy);
            cell(f, 8, 100. * r->buffer_efficiency, "%.2f");
            cell(f, 8, r->if_mean, "%.3f");
            cell(f, 8, r->if_max, "%.3f");
            cell(f, 11, r->buffer_full, "%.1f");
            cell(f, 11, r->alloc_wait, "%.1f");
            cell(f, 8, r->overprovision, "%.2g");
            cell(f, 9, busy > 0 ? ci / busy : NAN, "%.2f");
            fputc('\n', f);
        }
        for (int i = 0; i < nres; i++) {
            const sim_result_t *r = &res[i];
            if (r->ndevs > 16)
                continue;
            fprintf(f, "%s, per node (concurrency mean/max, time full, GB written):", r->policy);
            for (int k = 0; k < r->ndevs; k++) {
                const sim_dev_t *d = &r->devs[k];
                fprintf(f, "%s %s%s%s %.2f/%d %.0fs %.1f", k ? ";" : "", d->name,
                        d->device[0] ? ":" : "", d->device, d->st.concurrency_mean,
                        d->st.concurrency_max, d->st.full_time, d->st.written / 1e9);
            }
            fputc('\n', f);
        }
    }
    return 0;
}

int sim_output(FILE *f, sim_format_t fmt, const wl_t *wl, uint64_t seed, const sim_result_t *res,
               int nres)
{
    int rc;
    switch (fmt) {
    case OUT_JSON:
        rc = out_json(f, wl, seed, res, nres);
        break;
    case OUT_CSV:
        rc = out_csv(f, res, nres);
        break;
    default:
        rc = out_table(f, wl, seed, res, nres);
        break;
    }
    if (rc == 0 && (fflush(f) != 0 || ferror(f)))
        return -1;
    return rc;
}
