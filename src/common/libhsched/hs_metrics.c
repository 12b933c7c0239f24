/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_metrics.c — the figures of a finished run (doc/design.md §2; Gainaru §2.2 for
 * SysEfficiency, its upper limit and Dilation; IO-Sets "Evaluation" for stretch,
 * utilization and I/O slowdown; Jain's index for fairness).
 *
 * Conventions where a ratio is 0/0 (a job with no work or no I/O):
 *   rho = 1 when work + io_dedicated == 0; rho~ = rho when d_k == r_k;
 *   dilation = 1 when rho == rho~ == 0, +inf when only rho~ == 0;
 *   stretch = 1 when work + io_dedicated == 0; io_slowdown = 1 when io_dedicated == 0;
 *   utilization = 0 when the makespan is 0; fairness = 1 when every dilation is 0.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "hsched.h"

static void app_metrics(const hs_job_stats_t *a, hs_app_metrics_t *m)
{
    double alone = a->work + a->io_dedicated;
    double life = a->end - a->release;

    m->rho = alone > 0 ? a->work / alone : 1.0;
    m->rho_tilde = life > 0 ? a->work / life : m->rho;
    if (m->rho_tilde > 0)
        m->dilation = m->rho / m->rho_tilde;
    else
        m->dilation = m->rho > 0 ? INFINITY : 1.0;
    /* IO-Sets: "how many times slower does the application run (compared to
     * running by itself)" = (d_k - r_k) / (work_k + io_dedicated_k) */
    m->stretch = alone > 0 ? life / alone : 1.0;
    m->io_slowdown = a->io_dedicated > 0 ? a->io_time / a->io_dedicated : 1.0;
    m->stall = fmax(0.0, a->io_time - a->io_dedicated);
}

int hs_metrics_compute(const hs_job_stats_t *apps, size_t n, int N, hs_metrics_t *m,
                       hs_app_metrics_t *per_app)
{
    hs_metrics_t r;
    double rmin = INFINITY, dmax = -INFINITY;
    double sum_work_nodes = 0, sum_dil = 0, sum_dil2 = 0;
    size_t i;

    if (!apps || n == 0 || N <= 0 || !m) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; i < n; i++) {
        const hs_job_stats_t *a = &apps[i];
        if (!isfinite(a->end) || !isfinite(a->release) || a->end < a->release || a->nodes < 1
            || !(a->work >= 0) || !(a->io_dedicated >= 0) || !(a->io_time >= 0)) {
            errno = EINVAL;
            return -1;
        }
    }
    memset(&r, 0, sizeof(r));
    for (i = 0; i < n; i++) {
        const hs_job_stats_t *a = &apps[i];
        hs_app_metrics_t am;

        app_metrics(a, &am);
        if (per_app)
            per_app[i] = am;
        /* Gainaru §2.2: SysEfficiency = (1/N) sum beta_k rho~_k(d_k), upper limit
         * (1/N) sum beta_k rho_k, Dilation = max_k rho_k / rho~_k(d_k) */
        r.sys_efficiency += a->nodes * am.rho_tilde;
        r.upper_limit += a->nodes * am.rho;
        r.dilation = fmax(r.dilation, am.dilation);
        r.stretch_max = fmax(r.stretch_max, am.stretch);
        r.stretch_mean += am.stretch;
        r.io_slowdown_mean += am.io_slowdown;
        r.io_slowdown_max = fmax(r.io_slowdown_max, am.io_slowdown);
        r.stall_time += am.stall;
        r.io_wait += a->io_wait;
        sum_dil += am.dilation;
        sum_dil2 += am.dilation * am.dilation;
        sum_work_nodes += a->nodes * a->work;
        rmin = fmin(rmin, a->release);
        dmax = fmax(dmax, a->end);
    }
    r.sys_efficiency /= N;
    r.upper_limit /= N;
    r.stretch_mean /= n;
    r.io_slowdown_mean /= n;
    r.dilation_mean = sum_dil / n;
    r.makespan = dmax - rmin;
    /* IO-Sets utilization: compute node-seconds over N x makespan */
    r.utilization = r.makespan > 0 ? sum_work_nodes / (N * r.makespan) : 0.0;
    /* Jain's index over per-job dilations: (sum x)^2 / (n sum x^2) */
    if (sum_dil2 > 0 && isfinite(sum_dil2))
        r.fairness = sum_dil * sum_dil / (n * sum_dil2);
    else if (sum_dil2 == 0)
        r.fairness = 1.0;
    else
        r.fairness = NAN;
    *m = r;
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
