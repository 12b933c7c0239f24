/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  slurm_compat.h - what differs between the Slurm releases the Harmonia
 *  plugins build against (22.05 to 25.11), kept in this one place.
 *
 *  The plugins are written against current Slurm: its header paths, its type
 *  names (list_t, list_itr_t, job_details_t), job_state_set_flag(), the
 *  argument lists of its plugin API.  For an older release this header maps
 *  them onto what that release has.  Each block names the release that made
 *  the change.
 *
 *  Two parts.  The first (always) gives the names.  The second, asked for
 *  with SLURM_COMPAT_BB_API or SLURM_COMPAT_JOB_SUBMIT_API defined before a
 *  second inclusion at the end of the plugin's main file, defines the plugin
 *  API symbols whose argument lists older releases call differently: the
 *  plugin defines the current form, renamed here, and the old symbol calls
 *  it.  The compiler cannot check those argument lists (slurmctld looks the
 *  symbols up by name), which is why they are all here.
\*****************************************************************************/

#ifndef _HARMONIA_SLURM_COMPAT_H
#define _HARMONIA_SLURM_COMPAT_H

#include "slurm/slurm.h"
#include "slurm/slurm_version.h"

#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0)
#error "Harmonia's plugins need Slurm 22.05 or later"
#endif

#define SLURM_AT_LEAST(maj, min) (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(maj, min, 0))

#include "src/common/list.h"
#include "src/common/node_conf.h"
#if SLURM_AT_LEAST(23, 2)
#include "src/interfaces/select.h" /* 23.02 moved plugin interfaces */
#else
#include "src/common/select.h"
#endif
#include "src/slurmctld/slurmctld.h"

/* 23.02 named the list and job details types (22.05: List, ListIterator,
 * struct job_details); 24.11 removed the old names. */
#if !SLURM_AT_LEAST(23, 2)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
typedef struct job_details job_details_t;
#endif

/* 23.11.5: job state flags are set through these, which keep slurmctld's job
 * state cache (squeue --only-job-state) right. */
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 5)
static inline void job_state_set_flag(job_record_t *job_ptr, uint32_t flag)
{
    job_ptr->job_state |= flag;
}

static inline void job_state_unset_flag(job_record_t *job_ptr, uint32_t flag)
{
    job_ptr->job_state &= ~flag;
}
#endif

/*
 * Does the job want whole nodes to itself (--exclusive; since 24.05 also
 * --exclusive=topo)?  Up to 23.11, whole_node is one value (1 required,
 * 2 user, 3 mcs); since 24.05 it is a set of bits (WHOLE_NODE_MCS is 4,
 * WHOLE_TOPO 8), so neither "== 1" nor "& 1" is right on both.
 */
static inline bool slurm_job_whole_node(const job_details_t *details)
{
#if SLURM_AT_LEAST(24, 5)
    return details->whole_node & (WHOLE_NODE_REQUIRED | WHOLE_TOPO);
#else
    return details->whole_node == WHOLE_NODE_REQUIRED;
#endif
}

/*
 * CPUs allocated on a node, as the select plugin last counted them (call
 * select_g_select_nodeinfo_set_all() first, node read lock held).  25.05
 * keeps them in the node record and removed select_g_select_nodeinfo_get().
 */
static inline uint16_t slurm_node_alloc_cpus(node_record_t *node_ptr)
{
#if SLURM_AT_LEAST(25, 5)
    return node_ptr->alloc_cpus;
#else
    uint16_t alloc = 0;

    (void)select_g_select_nodeinfo_get(node_ptr->select_nodeinfo, SELECT_NODEDATA_SUBCNT,
                                       NODE_STATE_ALLOCATED, &alloc);
    return alloc;
#endif
}

/*
 * 23.02 changed plugin API argument lists: bb_p_get_status() got the
 * caller's uid and gid, bb_p_run_script() the job_info of the script's job,
 * job_submit's job_modify() an err_msg for the user.  The plugins define
 * the current forms; before 23.02 they get other names and the second part
 * below defines the symbols slurmctld 22.05 calls.
 *
 * 23.02 also moved the split of a heterogeneous job's batch script into
 * its components' scripts into the plugin (bb_p_build_het_job_script,
 * which slurmctld requires from then on, done with the common code's
 * bb_common_build_het_job_script()); 22.05's slurmctld does it itself, with
 * the same rule, in bb_g_build_het_job_script().
 */
#if !SLURM_AT_LEAST(23, 2)
#define bb_p_get_status harmonia_bb_p_get_status
#define bb_p_run_script harmonia_bb_p_run_script
#define job_modify harmonia_job_modify
extern char *bb_g_build_het_job_script(char *script, uint32_t het_job_offset);
#define bb_common_build_het_job_script(script, offset, is_directive) \
    ((void)(is_directive), bb_g_build_het_job_script((script), (offset)))
#endif

#endif /* _HARMONIA_SLURM_COMPAT_H */

/* --------------------------------------------------------------------------
 * Second part: the old API symbols, in the plugin's main file, after the
 * current forms are defined.
 */
#if !SLURM_AT_LEAST(23, 2)

#if defined(SLURM_COMPAT_BB_API) && !defined(_HARMONIA_SLURM_COMPAT_BB_API)
#define _HARMONIA_SLURM_COMPAT_BB_API
#undef bb_p_get_status
#undef bb_p_run_script
extern char *harmonia_bb_p_get_status(uint32_t argc, char **argv, uint32_t uid, uint32_t gid);
extern int harmonia_bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv,
                                    job_info_msg_t *job_info, char **resp_msg);

/* 22.05: the caller is not known (scontrol show bbstat shows all) */
extern char *bb_p_get_status(uint32_t argc, char **argv)
{
    return harmonia_bb_p_get_status(argc, argv, NO_VAL, NO_VAL);
}

extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv, char **resp_msg)
{
    return harmonia_bb_p_run_script(func, job_id, argc, argv, NULL, resp_msg);
}
#endif

#if defined(SLURM_COMPAT_JOB_SUBMIT_API) && !defined(_HARMONIA_SLURM_COMPAT_JOB_SUBMIT_API)
#define _HARMONIA_SLURM_COMPAT_JOB_SUBMIT_API
#undef job_modify
extern int harmonia_job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid,
                               char **err_msg);

/* 22.05 has no message for the user of scontrol update: log it */
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid)
{
    char *err_msg = NULL;
    int rc = harmonia_job_modify(job_desc, job_ptr, submit_uid, &err_msg);

    if (err_msg)
        info("job_submit/harmonia: %pJ: update refused: %s", job_ptr, err_msg);
    xfree(err_msg);
    return rc;
}
#endif

#endif /* !SLURM_AT_LEAST(23, 2) */
