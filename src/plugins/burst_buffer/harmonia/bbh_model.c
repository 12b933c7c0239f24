/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_model.c - burst_buffer/harmonia: the plugin's state, bbmgrd's client
 *  and its calls, and bbmgrd's pools as "scontrol show burst" shows them; the
 *  bottom of the plugin's files, which every other one uses.
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"

bb_state_t bb_state;
bbh_conf_t conf;
hjob_t *hjobs[HJOB_HASH]; /* protected by bb_state.bb_mutex */
pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
bool agent_stop = false;
bool agent_rescan = true;         /* scan all jobs (start, reconfig) */
bool agent_work = false;          /* a hook asked for work since the last round */
uint32_t *eager_ids = NULL;       /* submitted jobs whose stage-in may start */
int eager_cnt = 0, eager_cap = 0; /* (bb_state.bb_mutex) */
double eager_since = 0;           /* when eager_ids[0] came (monotonic) */
uint32_t *pool_nodes = NULL;      /* buffer nodes per pool (bb_mutex) */
uint32_t pool_nodes_cnt = 0;
json_t *pools_last = NULL; /* bbmgrd's last GET /v1/pools (bb_mutex) */

/* ------------------------------------------------------------------ bbmgrd */

extern hm_client_t *bbh_client(long timeout_s)
{
    hm_client_opts_t o = { 0 };
    hm_error_t err;
    hm_client_t *cli;

    o.url = conf.url;
    o.munge_socket = conf.munge_socket;
    o.connect_timeout_ms = 2000;
    o.timeout_ms = timeout_s * 1000;
    if (!(cli = hm_client_create(&o, &err)))
        error("%s: cannot create the bbmgrd client: %s", plugin_type, err.text);
    return cli;
}

/* *msg: what a refused request says ("bbmgrd: METHOD PATH: status: error"). */
extern void bbh_reply_msg(const char *method, const char *path, int status, json_t *resp,
                          char **msg)
{
    char buf[512];

    if (!msg)
        return;
    xfree(*msg);
    *msg = xstrdup_printf("bbmgrd: %s %s: %d: %s", method, path, status,
                          resp ? hm_error_text(resp, buf, sizeof(buf)) : "");
}

/* One request; returns the HTTP status or -1 (transport error, *msg set). */
extern int bbh_call(hm_client_t *cli, const char *method, const char *path, json_t *body,
                    json_t **resp, char **msg)
{
    hm_error_t err;
    int status;

    if (resp)
        *resp = NULL;
    status = hm_request(cli, method, path, body, resp, &err);
    if (status < 0) {
        xfree(*msg);
        *msg = xstrdup_printf("bbmgrd unreachable (%s)", err.text);
        return -1;
    }
    if (status >= 400)
        bbh_reply_msg(method, path, status, resp ? *resp : NULL, msg);
    return status;
}

extern const char *bbh_json_str(json_t *o, const char *key)
{
    json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ------------------------------------------------------------------ pools */

/* Take bbmgrd's GET /v1/pools answer as the pools "scontrol show burst"
 * shows. */
extern void bbh_pools_apply_locked(json_t *resp)
{
    json_t *pools = json_object_get(resp, "pools");

    if (!json_is_array(pools))
        return;
    if (pools_last != resp) {
        json_decref(pools_last);
        pools_last = json_incref(resp);
    }
    for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++)
        xfree(bb_state.bb_config.pool_ptr[i].name);
    xfree(bb_state.bb_config.pool_ptr);
    bb_state.bb_config.pool_cnt = json_array_size(pools);
    bb_state.bb_config.pool_ptr =
        xcalloc(bb_state.bb_config.pool_cnt + 1, sizeof(burst_buffer_pool_t));
    bb_state.total_space = bb_state.used_space = bb_state.unfree_space = 0;
    uint64_t free_space;
    xfree(pool_nodes);
    pool_nodes_cnt = bb_state.bb_config.pool_cnt;
    pool_nodes = xcalloc(pool_nodes_cnt + 1, sizeof(*pool_nodes));
    for (size_t i = 0; i < json_array_size(pools); i++) {
        json_t *p = json_array_get(pools, i);
        burst_buffer_pool_t *bp = &bb_state.bb_config.pool_ptr[i];
        pool_nodes[i] = json_integer_value(json_object_get(p, "nodes"));
        const char *name = bbh_json_str(p, "name");
        bp->name = xstrdup(name ? name : "?");
        bp->total_space = json_number_value(json_object_get(p, "capacity"));
        bp->used_space = json_number_value(json_object_get(p, "used"));
        free_space = json_number_value(json_object_get(p, "free"));
        bp->unfree_space = bp->total_space > free_space ? bp->total_space - free_space : 0;
        bp->granularity = json_number_value(json_object_get(p, "granularity"));
        if (!bp->granularity)
            bp->granularity = 1;
        bb_state.total_space += bp->total_space;
        bb_state.used_space += bp->used_space;
        bb_state.unfree_space += bp->unfree_space;
    }
    bb_state.last_update_time = time(NULL);
}

extern void bbh_pools_apply(json_t *resp)
{
    slurm_mutex_lock(&bb_state.bb_mutex);
    bbh_pools_apply_locked(resp);
    slurm_mutex_unlock(&bb_state.bb_mutex);
}
