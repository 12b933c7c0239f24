/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_sched.c — the top of libhsched: the table that maps a policy kind to its
 * implementation, and hs_sched_create(), which hands it to the core.  The core and
 * the policies stand below it and reach the table only through the pointer they
 * are given (hs_policy_ops_f: the core's, auto's for its candidates), so no
 * policy that runs others calls back up into it (HACKING.md, Layers).
 */
#include <stddef.h>

#include "hsched.h"
#include "policy.h"

hs_sched_t *hs_sched_create(const hs_platform_t *plat, const hs_policy_t *pol, hu_error_t *err)
{
    return hs_core_create(plat, pol, hs_policy_ops, err);
}

/* The implementation of each kind: online policies (hs_online.c), periodic
 * schedules (hs_pol_periodic.c over hs_periodic.c) and Harmonia's dynamic
 * programme (hs_pol_harmonia.c over hs_dp.c).  A kind without ops would make
 * hs_sched_create() answer ENOTSUP. */
const hs_policy_ops_t *hs_policy_ops(hs_policy_kind_t kind)
{
    switch (kind) {
    case HS_POL_FAIRSHARE:
    case HS_POL_STATIC: /* no buffer tier yet: fairshare on the PFS */
        return &hs_ops_fairshare;
    case HS_POL_FCFS:
        return &hs_ops_fcfs;
    case HS_POL_ROUNDROBIN:
    case HS_POL_MINDILATION:
    case HS_POL_MAXSYSEFF:
    case HS_POL_MINMAX:
        return &hs_ops_gainaru;
    case HS_POL_SET:
    case HS_POL_SET_FAIRSHARE:
    case HS_POL_PRIORITY_SHARING:
        return &hs_ops_iosets;
    case HS_POL_PERIODIC_THROU:
    case HS_POL_PERIODIC_CONG:
    case HS_POL_PERSCHED:
        return &hs_ops_periodic;
    case HS_POL_HARMONIA_MAXBW:
    case HS_POL_HARMONIA_MINSTALL:
    case HS_POL_HARMONIA_FAIRNESS:
    case HS_POL_HARMONIA_BUFFER_EFF:
    case HS_POL_HARMONIA_PRIORITY:
        return &hs_ops_harmonia;
    case HS_POL_AUTO:
        return &hs_ops_auto;
    case HS_POL__COUNT:
        break;
    }
    return NULL;
}

/* vi: ts=4 sw=4 expandtab
 */
