/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_sched.c - burst_buffer/harmonia: when a job's buffer is set up (array
 *  throttles, free CPUs, the expected start) and the pending reason of a job
 *  that waits for something else than its buffer.
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_jobs.h"
#include "bbh_sched.h"

/*
 * A task of a job array whose throttle (--array=...%N) is reached: N tasks run
 * or have their buffer set up.  It takes no buffer space others could use;
 * its stage-in starts when a running task ends.  Call with bb_mutex held.
 */
static bool _array_throttled(job_record_t *job_ptr)
{
    job_record_t *meta;
    uint32_t busy;

    if (!job_ptr->array_job_id)
        return false;
    /* not from the job's reason: this plugin sets it too (bbh_set_reason) */
    meta = job_ptr->array_recs ? job_ptr : find_job_record(job_ptr->array_job_id);
    if (!meta || !meta->array_recs || !meta->array_recs->max_run_tasks)
        return false;
    busy = meta->array_recs->tot_run_tasks;
    for (int i = 0; i < HJOB_HASH; i++)
        for (hjob_t *h = hjobs[i]; h; h = h->next) {
            bb_job_t *b;
            if (h->array_job_id != job_ptr->array_job_id || h->job_id == job_ptr->job_id
                || !(b = bb_job_find(&bb_state, h->job_id)))
                continue;
            if (b->state == BB_STATE_STAGING_IN || b->state == BB_STATE_STAGED_IN)
                busy++;
        }
    return busy >= meta->array_recs->max_run_tasks;
}

/*
 * CPUs of each node (by node index) that running or suspended jobs hold, as a
 * partition that oversubscribes counts them: the select plugin's count of
 * allocated CPUs is the union of its rows, which says nothing of how many of
 * them are left there.  Built again when the jobs on the nodes change, at most
 * once a second otherwise.  Call with bb_mutex and the job and node read
 * locks.
 */
static uint32_t *held_cpus = NULL;
static int held_cpus_cnt = 0;
static time_t held_cpus_time = 0;
static uint64_t held_cpus_sig = 0;

static int _add_held_cpus(void *x, void *arg)
{
    job_record_t *job_ptr = x;
    job_resources_t *r = job_ptr->job_resrcs;
    int i, k = 0, n;

    if ((!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) || !r || !r->node_bitmap
        || !r->cpus)
        return 0;
    n = MIN(bit_size(r->node_bitmap), held_cpus_cnt);
    for (i = 0; (i < n) && (k < r->nhosts); i++)
        if (bit_test(r->node_bitmap, i))
            held_cpus[i] += r->cpus[k++];
    return 0;
}

static void _held_cpus_update(void)
{
    node_record_t *node_ptr;
    uint64_t sig = 0;
    time_t now = time(NULL);

    for (int i = 0; (node_ptr = next_node(&i)); i++)
        sig = sig * 31 + node_ptr->run_job_cnt * 7 + node_ptr->sus_job_cnt;
    if (held_cpus && (held_cpus_cnt == node_record_count) && (sig == held_cpus_sig)
        && (now == held_cpus_time))
        return;
    if (held_cpus_cnt != node_record_count) {
        xfree(held_cpus);
        held_cpus = xcalloc(node_record_count, sizeof(*held_cpus));
        held_cpus_cnt = node_record_count;
    } else {
        memset(held_cpus, 0, held_cpus_cnt * sizeof(*held_cpus));
    }
    list_for_each(job_list, _add_held_cpus, NULL);
    held_cpus_sig = sig;
    held_cpus_time = now;
}

/*
 * How many jobs may share a CPU of the partition with this job: N with
 * OverSubscribe=FORCE:N, or YES:N and a job that asks --oversubscribe; else 1.
 */
static uint16_t _share_rows(part_record_t *part, job_details_t *d)
{
    uint16_t n = part->max_share & ~SHARED_FORCE;

    if ((part->max_share & SHARED_FORCE) && (n > 1))
        return n;
    if ((n > 1) && (d->share_res == 1))
        return n;
    return 1;
}

/*
 * Could the job get CPUs now?  Enough of its partition's nodes (up, not
 * drained) have the job's CPUs per node free (whole nodes with
 * OverSubscribe=EXCLUSIVE or --exclusive).  In a partition that
 * oversubscribes N times, a node has N times its CPUs, less those the jobs
 * on it hold.  Both are necessary conditions only: "no" means the job cannot
 * start now.  With preemption configured a job may start by preempting
 * others: yes.  Call with the job and node read locks.
 */
static bool _cpus_free(job_record_t *job_ptr)
{
    part_record_t *part = job_ptr->part_ptr;
    job_details_t *d = job_ptr->details;
    uint32_t need, per_node, found = 0;
    uint16_t rows;
    bool whole;
    node_record_t *node_ptr;

    if (!part || !part->node_bitmap || !d || !avail_node_bitmap)
        return true;
    if (slurm_conf.preempt_type && xstrcmp(slurm_conf.preempt_type, "preempt/none"))
        return true;
    rows = _share_rows(part, d);
    whole = slurm_job_whole_node(d)
            || ((rows == 1) && ((part->max_share == 0) || (d->share_res == 0)));
    need = d->min_nodes ? d->min_nodes : 1;
    per_node = MAX((d->min_cpus + need - 1) / need, 1);
    if (rows > 1)
        _held_cpus_update();
    else
        (void)select_g_select_nodeinfo_set_all(); /* cheap if unchanged */
    for (int i = 0; (node_ptr = next_node(&i)); i++) {
        uint32_t used = 0, cpus;

        if (!bit_test(part->node_bitmap, node_ptr->index)
            || !bit_test(avail_node_bitmap, node_ptr->index))
            continue;
        cpus = node_ptr->config_ptr ? node_ptr->config_ptr->cpus : node_ptr->cpus;
        if (rows > 1) {
            cpus *= rows;
            used = whole ? (node_ptr->run_job_cnt + node_ptr->sus_job_cnt)
                         : held_cpus[node_ptr->index];
        } else if (!IS_NODE_IDLE(node_ptr)) {
            used = slurm_node_alloc_cpus(node_ptr);
        }
        if (whole ? (used == 0) : (cpus > used && cpus - used >= per_node))
            if (++found >= need)
                return true;
    }
    return false;
}

/*
 * Is the job about to run?  Its CPUs are free now, or the backfill scheduler
 * expects them to be within STAGE_LEAD seconds (as Slurm's lua plugin, in
 * expected-start order: bb_p_job_try_stage_in gets the jobs sorted by it).  A
 * job that waits for CPUs holds no buffer space others could use meanwhile.
 * A start time now or past says nothing: the main scheduler sets it to the
 * time of its pass for any job it finds waiting for its buffer.  Call with
 * the job and node read locks.
 */
#define STAGE_LEAD 300
static bool _about_to_run(job_record_t *job_ptr)
{
    time_t now = time(NULL);

    if (_cpus_free(job_ptr))
        return true;
    return (job_ptr->start_time > now) && (job_ptr->start_time <= now + STAGE_LEAD);
}

/*
 * What a job whose stage-in has not started waits for, when it is not its
 * buffer: its array's throttle or CPUs (WAIT_NO_REASON when it may have its
 * buffer now).  Call with bb_mutex and the job and node read locks.
 */
extern enum job_state_reason bbh_waits_for(job_record_t *job_ptr)
{
    if (_array_throttled(job_ptr))
        return WAIT_ARRAY_TASK_LIMIT;
    if (!_about_to_run(job_ptr))
        return WAIT_RESOURCES;
    return WAIT_NO_REASON;
}

/* Give a job that waits for something else than its buffer that reason, where
 * slurmctld said BurstBufferResources.  Call as bbh_waits_for. */
extern void bbh_set_reason(job_record_t *job_ptr, enum job_state_reason why)
{
    if ((why == WAIT_NO_REASON) || !IS_JOB_PENDING(job_ptr)
        || (job_ptr->state_reason != WAIT_BURST_BUFFER_RESOURCE))
        return;
    job_ptr->state_reason = why;
    xfree(job_ptr->state_desc);
    last_job_update = time(NULL);
}

/*
 * Jobs that a main scheduler pass found waiting for CPUs or for their array's
 * throttle, not for their buffer (bb_mutex).  select_nodes() gives every job
 * whose stage-in has not started the reason BurstBufferResources, after it
 * asked bb_p_job_test_stage_in.  So that hook clears the job's start time
 * (saved here), which makes the pass end with bb_p_job_try_stage_in, under
 * the same locks; that one gives the job back its start time and its true
 * reason (bbh_not_bb_apply).
 */
typedef struct {
    uint32_t job_id;
    time_t start_time;
    enum job_state_reason why;
} not_bb_t;
static not_bb_t *not_bb = NULL;
static int not_bb_cnt = 0, not_bb_cap = 0;

extern void bbh_not_bb_add(job_record_t *job_ptr, enum job_state_reason why)
{
    int i;

    for (i = 0; i < not_bb_cnt; i++)
        if (not_bb[i].job_id == job_ptr->job_id)
            break;
    if (i == not_bb_cnt) {
        if (not_bb_cnt == not_bb_cap) {
            not_bb_cap = MAX(16, 2 * not_bb_cap);
            xrecalloc(not_bb, not_bb_cap, sizeof(*not_bb));
        }
        not_bb[i].job_id = job_ptr->job_id;
        not_bb[i].start_time = job_ptr->start_time;
        not_bb_cnt++;
    }
    not_bb[i].why = why;
    job_ptr->start_time = 0;
}

extern void bbh_not_bb_apply(void)
{
    time_t now = time(NULL);

    for (int i = 0; i < not_bb_cnt; i++) {
        job_record_t *job_ptr = find_job_record(not_bb[i].job_id);
        bb_job_t *bb_job;

        if (!job_ptr || !IS_JOB_PENDING(job_ptr)
            || !(bb_job = bb_job_find(&bb_state, job_ptr->job_id))
            || (bb_job->state >= BB_STATE_STAGING_IN))
            continue;
        if (not_bb[i].start_time > now) /* backfill's estimate */
            job_ptr->start_time = not_bb[i].start_time;
        bbh_set_reason(job_ptr, not_bb[i].why);
    }
    not_bb_cnt = 0;
}

/* Free what the tests above keep (fini). */
extern void bbh_sched_fini(void)
{
    xfree(not_bb);
    not_bb_cnt = not_bb_cap = 0;
    xfree(held_cpus);
    held_cpus_cnt = 0;
}

/*
 * May the stage-in of a job just submitted start now, rather than when a
 * scheduler pass first considers the job?  The same tests as the main
 * scheduler makes before it asks for stage-in (select_nodes): not held,
 * independent, eligible, within the accounting limits, partition up.  Anything
 * unusual (reservation, federation, array meta record) is left to the
 * scheduler.  Call with the job write lock and without bb_mutex (the
 * accounting check takes the association locks).
 */
static bool _eager_ok(job_record_t *job_ptr)
{
    job_details_t *d = job_ptr->details;

    if (!IS_JOB_PENDING(job_ptr) || (job_ptr->priority == 0) || !d || !job_ptr->burst_buffer
        || !job_ptr->burst_buffer[0])
        return false;
    if (job_ptr->array_recs
        && ((job_ptr->array_task_id == NO_VAL) || (job_ptr->array_task_id == INFINITE)))
        return false;
    if ((d->begin_time > time(NULL)) || (d->depend_list && list_count(d->depend_list)))
        return false;
    if (job_ptr->resv_name || job_ptr->fed_details || job_ptr->het_job_id)
        return false;
    switch (job_ptr->state_reason) {
    case WAIT_HELD:
    case WAIT_HELD_USER:
    case WAIT_MAX_REQUEUE:
    case WAIT_DEPENDENCY:
    case WAIT_DEP_INVALID:
    case WAIT_TIME:
    case FAIL_BURST_BUFFER_OP:
    case FAIL_ACCOUNT:
    case FAIL_QOS:
    case FAIL_BAD_CONSTRAINTS:
        return false;
    default:
        break;
    }
    if (!job_ptr->part_ptr || !(job_ptr->part_ptr->state_up & PARTITION_SCHED))
        return false;
    return acct_policy_job_runnable_pre_select(job_ptr, false);
}

/* Start the stage-in of the jobs submitted since the last round that may start
 * it now (see _eager_ok): their buffer is then usually ready before the first
 * scheduler pass looks at them, which starts them at once. */
extern void bbh_eager_stage_in(void)
{
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK, .node = READ_LOCK, .part = READ_LOCK };
    uint32_t *ids;
    int cnt;

    slurm_mutex_lock(&bb_state.bb_mutex);
    ids = eager_ids;
    cnt = eager_cnt;
    eager_ids = NULL;
    eager_cnt = eager_cap = 0;
    slurm_mutex_unlock(&bb_state.bb_mutex);
    if (!cnt) {
        xfree(ids);
        return;
    }
    lock_slurmctld(job_write_lock);
    for (int i = 0; i < cnt; i++) {
        job_record_t *job_ptr = find_job_record(ids[i]);
        bb_job_t *bb_job;

        if (!job_ptr || !_eager_ok(job_ptr))
            continue;
        slurm_mutex_lock(&bb_state.bb_mutex);
        if ((bb_job = bbh_get_bb_job(job_ptr)) && (bb_job->state == BB_STATE_PENDING)) {
            enum job_state_reason why = bbh_waits_for(job_ptr);

            if (why == WAIT_NO_REASON) {
                log_flag(BURST_BUF, "%pJ: stage-in starts at submission", job_ptr);
                bbh_start_stage_in(job_ptr, bb_job);
            }
            /* waits for CPUs or its array's throttle: stage-in
			 * when they are free (bb_p_job_try_stage_in) */
            bbh_set_reason(job_ptr, why);
        }
        slurm_mutex_unlock(&bb_state.bb_mutex);
    }
    unlock_slurmctld(job_write_lock);
    xfree(ids);
}

/*
 * Is the job's stage-in waiting for bbmgrd to find room for its buffer (its
 * allocation answered 507)?  Call with bb_mutex held.
 */
extern bool bbh_waits_for_space(job_record_t *job_ptr)
{
    hjob_t *h = bbh_hjob_find(job_ptr->job_id);

    return h && h->want == WANT_STAGE_IN && h->note && !xstrncmp(h->note, "waiting for ", 12)
           && !bb_find_alloc_rec(&bb_state, job_ptr);
}

struct alloc_end {
    time_t end;
    uint64_t size;
};

static int _end_cmp(const void *a, const void *b)
{
    time_t x = ((const struct alloc_end *)a)->end;
    time_t y = ((const struct alloc_end *)b)->end;

    return (x > y) - (x < y);
}

/*
 * An estimate from the free capacity bbmgrd reported: now if the pool can hold
 * the job's buffer, else the time at which enough of the Harmonia jobs holding
 * space in that pool will have ended (their end_time, soonest first).  When
 * that time is not known, because one of those jobs has no time limit (its
 * end_time is a year away) or because what they hold is not enough (space
 * held by persistent buffers), the answer is 0: squeue --start then shows N/A
 * rather than a made-up date.  A job that bbmgrd already found no room for (not
 * on enough nodes, although the pool's free space is enough) waits at least
 * for the first of them to end.
 */
extern time_t bb_p_job_get_est_start(job_record_t *job_ptr)
{
    time_t now = time(NULL), est = now;
    struct alloc_end *ends = NULL;
    int nends = 0;
    bb_job_t *bb_job;
    uint64_t free_space = 0, need;
    const char *pool;
    bool waiting;
    hjob_t *h;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return now;
    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_job = bbh_get_bb_job(job_ptr);
    if (!bb_job || !bb_job->total_size || !conf.configured)
        goto out;
    waiting = bbh_waits_for_space(job_ptr);
    if (bb_job->state >= BB_STATE_STAGING_IN && !waiting)
        goto out;
    pool = bb_job->job_pool;
    need = bb_job->total_size;
    for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++) {
        burst_buffer_pool_t *p = &bb_state.bb_config.pool_ptr[i];
        if (!pool || !xstrcmp(p->name, pool) || i == 0) {
            free_space = p->total_space > p->unfree_space ? p->total_space - p->unfree_space : 0;
            if (!pool || !xstrcmp(p->name, pool))
                break;
        }
    }
    if (waiting && free_space >= need)
        free_space = need - 1; /* room on enough nodes: a job must end */
    if (free_space >= need)
        goto out;
    /* the allocations of that pool by end time, soonest first; no time
	 * limit: an end not known (sorted last) */
    est = 0;
    for (int i = 0; i < BB_HASH_SIZE; i++)
        for (bb_alloc_t *a = bb_state.bb_ahash[i]; a; a = a->next) {
            job_record_t *j = a->job_id ? find_job_record(a->job_id) : NULL;
            if (!j || j == job_ptr || (pool && xstrcmp(a->pool, pool)))
                continue;
            xrecalloc(ends, nends + 1, sizeof(*ends));
            ends[nends].end = (j->time_limit == INFINITE || j->time_limit == NO_VAL)
                                  ? (time_t)INT32_MAX
                                  : MAX(j->end_time, now + 1);
            ends[nends++].size = a->size;
        }
    if (nends)
        qsort(ends, nends, sizeof(*ends), _end_cmp);
    for (int i = 0; i < nends; i++) {
        free_space += ends[i].size;
        if (free_space >= need) {
            est = (ends[i].end == (time_t)INT32_MAX) ? 0 : ends[i].end;
            break;
        }
    }
    xfree(ends);
    if ((h = bbh_hjob_find(job_ptr->job_id)))
        h->start_unknown = waiting && !est;
    log_flag(BURST_BUF, "%pJ: expected start %s%ld s (%s buffer space)", job_ptr,
             est ? "in " : "not known, ", est ? (long)(est - now) : 0L,
             waiting ? "waits for" : "no");
out:
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return est;
}
