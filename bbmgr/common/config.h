/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.h — bbmgr.yaml: one table describes every key.
 *
 * config_keys.def is the only place a key is declared, one X() row per key.  The
 * YAML parser, the defaults, `bbmgr config --help` and the bbmgr.yaml(5) man page
 * are generated from it (UnifyFS's configurator idea).  Columns:
 *
 *   X(section, struct, field, key, type, default, check, live, help)
 *
 *   section  one of BBMGR_CONFIG_SECTIONS; "listen" keys are written listen.port
 *   struct   the C struct holding the value (cfg_t, or an item of a list section)
 *   field    its member
 *   type     CFG_* below: how the YAML scalar is parsed
 *   default  text parsed exactly as if written in the file; NULL: required
 *   check    validator of the parsed value (NULL: none)
 *   live     true if SIGHUP applies a change without restart
 *   help     one sentence for --help and the man page
 */
#ifndef BBMGR_CONFIG_H
#define BBMGR_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "libhutil/hu_hostlist.h"
#include "libhutil/hutil.h"

typedef enum {
    CFG_STRING,    /* char * */
    CFG_BOOL,      /* bool: true/false/yes/no/on/off */
    CFG_INT,       /* long */
    CFG_DOUBLE,    /* double */
    CFG_SIZE,      /* uint64_t bytes: "1TiB", "200 GB" (unit required) */
    CFG_BANDWIDTH, /* double bytes/s: "2 GB/s" */
    CFG_DURATION,  /* double seconds: "30s", "10m", "1:30:00", bare seconds */
    CFG_HOSTLIST,  /* cfg_names_t: "bb[01-04]" or a list of such */
    CFG_DOUBLES,   /* cfg_doubles_t: a YAML list of numbers */
} cfg_type_t;

typedef struct {
    char *text; /* as written (joined with ',' when given as a list) */
    char **v;
    int n;
} cfg_names_t;

typedef struct {
    double *v;
    int n;
} cfg_doubles_t;

typedef struct {
    int line, col; /* where the item starts, for cross-check messages */
    cfg_names_t names;
    uint64_t capacity;
    double bandwidth;
    char *device;
    char *mount;
    char *pool;
    bool agent;
} cfg_nodeset_t;

typedef struct {
    int line, col;
    char *name;
    cfg_doubles_t msca;
} cfg_device_t;

typedef struct {
    int line, col;
    char *name;
    uint64_t granularity;
} cfg_pool_t;

typedef struct cfg {
    char *path; /* file it was read from */
    /* listen */
    char *listen_address;
    long listen_port;
    char *listen_unix;
    char *listen_admin_socket;
    /* state */
    char *state_dir;
    bool state_durable;
    /* auth */
    char *auth_type;
    char *auth_munge_socket;
    char *auth_slurm_user;
    bool auth_metrics_public;
    double auth_session_ttl;
    /* log */
    char *log_level;
    char *log_file;
    char *log_format;
    /* policy */
    char *policy_id;
    double policy_overprovision;
    double policy_starve_factor; /* 0: off */
    double policy_starve_floor;
    long policy_decision_budget; /* work units of a decision (hs_policy_t.max_work) */
    /* platform (the model libhsched schedules) */
    long platform_compute_nodes;
    double platform_node_bandwidth;
    double platform_pfs_bandwidth;
    /* limits */
    uint64_t limits_max_body;
    long limits_max_connections;
    long limits_reserved_connections;
    long limits_max_connections_per_uid;
    double limits_connection_timeout;
    double limits_request_deadline;
    double limits_max_wait;
    long limits_max_jobs;
    long limits_max_persistent;
    long limits_persistent_per_user;
    uint64_t limits_persistent_capacity_per_user;
    double limits_grant_timeout;
    long limits_history_keep;
    double limits_keep_closed;
    long limits_keep_closed_count;
    long limits_threads;
    /* stage */
    char *stage_mode;
    /* mover */
    long mover_threads;
    uint64_t mover_chunk;
    long mover_depth;
    char *mover_verify;
    char *mover_checksum;
    double mover_max_rate;
    bool mover_durable_stage_in;
    bool mover_durable_before_done;
    long mover_max_entries;
    /* capacity */
    char *capacity_over;
    char *capacity_enforce;
    /* agents (bbnoded) */
    double agents_down_after;
    double agents_interval;
    long agents_min_uid;
    char *agents_manager;
    /* list sections */
    cfg_nodeset_t *nodes;
    int nnodes;
    cfg_device_t *devices;
    int ndevices;
    cfg_pool_t *pools;
    int npools;
    /* derived */
    uid_t slurm_uid;
} cfg_t;

/* S(name, is_list, item_struct, array_field, count_field, help) */
#define BBMGR_CONFIG_SECTIONS(S) \
    S(listen, false, cfg_t, _, _, "Where the HTTP/JSON API listens.") \
    S(state, false, cfg_t, _, _, "Durable state (SQLite database).") \
    S(auth, false, cfg_t, _, _, "Authentication of callers (MUNGE).") \
    S(log, false, cfg_t, _, _, "Logging.") \
    S(policy, false, cfg_t, _, _, "Scheduling policy and allocation.") \
    S(platform, false, cfg_t, _, _, "The compute side as the scheduler models it.") \
    S(limits, false, cfg_t, _, _, "Timeouts and limits.") \
    S(stage, false, cfg_t, _, _, "Stage-in and stage-out.") \
    S(mover, false, cfg_t, _, _, \
      "The data mover: stage-in/out copies inside bbmgrd, shared between jobs by SFQ(D)+.") \
    S(capacity, false, cfg_t, _, _, \
      "What a buffer may hold: its measured use against its capacity (doc/security.md, " \
      "Capacity).") \
    S(agents, false, cfg_t, _, _, \
      "Buffer-node agents (bbnoded(8)) of the node sets with agent: true.") \
    S(nodes, true, cfg_nodeset_t, nodes, nnodes, \
      "Buffer nodes: a list of sets of nodes sharing the same properties.") \
    S(devices, true, cfg_device_t, devices, ndevices, \
      "Device profiles: sensitivity of a storage device to concurrent streams.") \
    S(pools, true, cfg_pool_t, pools, npools, \
      "Pools of buffer nodes, as Slurm's burst_buffer pools.")

/* How bbmgr.yaml's host lists expand: at most 65536 names of at most 255 letters,
 * digits, '-', '_' and '.', blanks around items ignored. */
extern const hu_hostlist_opts_t cfg_hostlist_opts;

/* Read and check FILE.  On error returns NULL, errno set, and err->text is
 * "FILE:LINE:COL: reason" (or "FILE: reason" when no position applies). */
cfg_t *cfg_load(const char *path, hu_error_t *err);
void cfg_destroy(cfg_t *cfg); /* accepts NULL, keeps errno */

/* Which keys differ between two configurations and need a restart: writes their
 * names into buf (comma-separated); returns how many. */
int cfg_restart_needed(const cfg_t *a, const cfg_t *b, char *buf, size_t len);

/* Documentation generated from the table. */
void cfg_print_help(FILE *f);
void cfg_print_man(FILE *f);

/* Index of the pool named 'name', or -1. */
int cfg_pool_index(const cfg_t *cfg, const char *name);
int cfg_device_index(const cfg_t *cfg, const char *name);

/* A node's mount: mount with %n replaced by the node's name (malloc'd). */
char *cfg_node_mount(const char *mount, const char *node);

/* True if addr is a loopback address (127/8, ::1, localhost). */
bool cfg_is_loopback(const char *addr);

#endif /* BBMGR_CONFIG_H */
