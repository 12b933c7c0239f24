/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef _BBH_JOB_H
#define _BBH_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libhutil/directive.h"

/*
 * What the symbols of stage paths and persistent buffer names stand for, as
 * Slurm's burst buffer plugins replace them: %% '%', %A the array's master job
 * id (the job id outside an array), %a the array task id, %d the working
 * directory, %j the job id, %u the user name, %x the job name.  job_id 0: not
 * known yet (at submission), %j, %A and %a are left as they are.
 */
typedef struct {
    uint32_t job_id;
    uint32_t array_job_id;  /* 0: not an array task */
    uint32_t array_task_id; /* NO_VAL: not an array task */
    const char *user;
    const char *name;
    const char *work_dir;
} bbh_sym_t;

/* True if 's' holds a symbol. */
extern bool bbh_has_symbol(const char *s);

/*
 * 's' with its symbols replaced (xmalloc'd).  *unresolved (may be NULL) gets
 * the offset in the result of the first symbol left as it is (not known yet),
 * or (size_t) -1.  Other '%' sequences are kept as they are.
 */
extern char *bbh_subst(const char *s, const bbh_sym_t *sym, size_t *unresolved);

/*
 * Replace the symbols of every stage path and persistent buffer name of
 * 'req' (all known), then check the result as a directive again.  0, or -1
 * with *err (xmalloc'd) saying what the replaced text breaks.
 */
extern int bbh_subst_request(hu_bb_request_t *req, const bbh_sym_t *sym, char **err);

/*
 * Check the stage paths of 'req' as the user (uid, gid and the user's
 * groups) would see them: stage_in sources exist and have the type asked
 * for, the directories of stage_out destinations exist.  Run in a child
 * process with the user's credentials, so that the answer tells the user
 * nothing about paths the user may not see.  A path part after a symbol not
 * yet known (%j, %A, %a at submission) is not checked.  0 (also when the
 * check cannot be made: stage-in tells), or -1 with *err (xmalloc'd).
 */
extern int bbh_check_paths_as(const hu_bb_request_t *req, uid_t uid, gid_t gid,
                              const bbh_sym_t *sym, char **err);

/*
 * The #BB_HARMONIA lines of one component of a heterogeneous job
 * (hu_bb_collect_script() of its batch script's lines between the
 * component's "#SBATCH hetjob" separators, line numbers kept): each
 * component has its own request.  A script without separators (a job that is
 * not heterogeneous, or the script slurmctld made for one component) is all
 * one component's, as is any script when het_job_offset is NO_VAL (not a
 * heterogeneous job).  NULL without memory; free() the result.
 */
extern char *bbh_collect_script(const char *script, uint32_t het_job_offset);

/* How many components the script's "#SBATCH hetjob" separators make (1 for a
 * script without any). */
extern uint32_t bbh_het_components(const char *script);

#endif
