/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_model.h - the bottom of burst_buffer/harmonia's files (bbh_model.c):
 *  the job record (hjob_t), the agent's work, the plugin's state and the
 *  helpers every file uses (the bbmgrd client and its calls, the pools).
 *  Each file above has its own header; only the plugin API (plugin_*, init,
 *  fini, bb_p_*) is exported.
\*****************************************************************************/

#ifndef _BBH_MODEL_H
#define _BBH_MODEL_H

#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/run_in_daemon.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/node_conf.h"
#include "src/common/parse_time.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/acct_policy.h"
#include "src/plugins/burst_buffer/common/burst_buffer_common.h"

#include "slurm_compat.h"

#include "harmonia/client.h"
#include "libhutil/directive.h"

#include "bbh_conf.h"
#include "bbh_job.h"

extern const char plugin_type[];

/* What the agent must do for a job. */
typedef enum {
    WANT_NOTHING = 0,
    WANT_STAGE_IN,  /* register, allocate, persistent, stage-in */
    WANT_RECONCILE, /* after a restart: learn the allocation again */
    WANT_BEGIN,     /* tell bbmgrd the job runs */
    WANT_STAGE_OUT, /* stage-out, destroy persistent, teardown */
    WANT_TEARDOWN,  /* cancel: end the job in bbmgrd */
    WANT_KEPT,      /* failed stage-out: the buffer is kept until
				 * an administrator releases it (bbmgr release) */
} want_t;

#define KEPT_CHECK 10.0 /* seconds between looks at a kept buffer */
#define DIRS_CHECK 0.25 /* seconds between looks at directories being made */

/* Result of one agent step. */
typedef enum {
    STEP_NEXT,  /* go on with the next step now */
    STEP_AGAIN, /* try this step again later */
    STEP_DONE,  /* the whole operation is over */
    STEP_FAIL,  /* permanent failure */
} step_rc_t;

#define HJOB_HASH 256

typedef struct hjob {
    uint32_t job_id;
    uint32_t user_id;
    uint32_t group_id;
    uint32_t array_job_id; /* %A, %a */
    uint32_t array_task_id;
    char *user_name;
    char *job_name;
    char *work_dir; /* %d */
    char *canon;    /* canonical directive text */
    want_t want;
    int step;
    double next_try;   /* CLOCK_MONOTONIC seconds */
    time_t alloc_time; /* when bbmgrd first allocated its buffer */
    unsigned round;    /* agent round that last ran it */
    int tries;
    int polls;          /* stage polls since the transfers were asked */
    bool seen_wait;     /* a scheduler pass saw it waiting for stage-in */
    bool start_unknown; /* waits for space whose end is not known */
    bool registered;
    bool keep_pending; /* teardown of a failed stage-in: the job stays */
    char *bb_path;     /* $HARMONIA_BB */
    char *bb_nodes;    /* buffer nodes, comma separated */
    char *persist_env; /* "HARMONIA_PERSISTENT_<name>=<path>\n"... */
    uint32_t ncompute;
    char *note;    /* what the agent waits for (state_desc) */
    char *learned; /* what bbmgrd learned of its I/O phases, as
				 * "scontrol show burst" shows it (bbh_show.c) */
    struct hjob *next;
} hjob_t;


/* What an agent step needs, copied out of the hjob under the mutex. */
typedef struct {
    uint32_t job_id;
    uint32_t user_id, group_id;
    char *user_name, *job_name;
    hu_bb_request_t req;
    want_t want;
    int step;
    bool registered;
    char *bb_path;
    uint32_t ncompute;
    /* results */
    char *new_path, *new_nodes, *persist_env;
    char *msg;
    char *subst_err; /* the request after symbol replacement is bad */
    bool allocated;
    time_t alloc_created; /* when bbmgrd made the allocation (0: not said) */
    bool released;        /* the job's space went back to its pools */
    bool stage_wait;      /* transfers asked for or under way */
    bool dirs_ready;      /* the allocation's reply said its directories are made */
    bool dirs_wait;       /* they are not yet */
} work_t;

#define BATCH_JOBS 32 /* jobs per batch (well within max_body) */

/*
 * The agent lets submissions gather this long before it starts their
 * stage-in, so that a burst of them goes to bbmgrd in one batch (one exchange
 * and one commit for all) rather than one by one.  Well under the time
 * slurmctld takes to look at a new job (batch_sched_delay, sched_min_interval),
 * so their buffers are still ready before the first scheduler pass.
 */
#define EAGER_GATHER 0.03 /* seconds */

/* bbh_model.c: the plugin's state (bb_state.bb_mutex, but conf) */
extern bb_state_t bb_state;
extern bbh_conf_t conf;
extern hjob_t *hjobs[HJOB_HASH];
extern pthread_cond_t agent_cond;
extern bool agent_stop;
extern bool agent_rescan;
extern bool agent_work;
extern uint32_t *eager_ids;
extern int eager_cnt, eager_cap;
extern double eager_since;
extern uint32_t *pool_nodes;
extern uint32_t pool_nodes_cnt;
extern json_t *pools_last;

/* bbh_model.c: bbmgrd's client and its calls */
extern hm_client_t *bbh_client(long timeout_s);
extern int bbh_call(hm_client_t *cli, const char *method, const char *path, json_t *body,
                    json_t **resp, char **msg);
extern void bbh_reply_msg(const char *method, const char *path, int status, json_t *resp,
                          char **msg);
extern const char *bbh_json_str(json_t *o, const char *key);

/* bbh_model.c: bbmgrd's pools as "scontrol show burst" shows them */
extern void bbh_pools_apply(json_t *resp);
extern void bbh_pools_apply_locked(json_t *resp);

#endif
