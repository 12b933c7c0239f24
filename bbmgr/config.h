/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config.h — bbmgr.yaml: one table describes every key.
 *
 * BBMGR_CONFIG_KEYS is the only place a key is declared.  The YAML parser, the
 * defaults, `bbmgr config --help` and the bbmgr.yaml(5) man page are generated from
 * it (UnifyFS's configurator idea).  Columns:
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

#include "libhutil/hutil.h"

typedef enum {
    CFG_STRING,         /* char * */
    CFG_BOOL,           /* bool: true/false/yes/no/on/off */
    CFG_INT,            /* long */
    CFG_DOUBLE,         /* double */
    CFG_SIZE,           /* uint64_t bytes: "1TiB", "200 GB" (unit required) */
    CFG_BANDWIDTH,      /* double bytes/s: "2 GB/s" */
    CFG_DURATION,       /* double seconds: "30s", "10m", "1:30:00", bare seconds */
    CFG_HOSTLIST,       /* cfg_names_t: "bb[01-04]" or a list of such */
    CFG_DOUBLES,        /* cfg_doubles_t: a YAML list of numbers */
} cfg_type_t;

typedef struct {
    char *text;         /* as written (joined with ',' when given as a list) */
    char **v;
    int n;
} cfg_names_t;

typedef struct {
    double *v;
    int n;
} cfg_doubles_t;

typedef struct {
    int line, col;      /* where the item starts, for cross-check messages */
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
    char *path;                     /* file it was read from */
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
    /* platform (the model libhsched schedules) */
    long platform_compute_nodes;
    double platform_node_bandwidth;
    double platform_pfs_bandwidth;
    /* limits */
    uint64_t limits_max_body;
    long limits_max_connections;
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
    /* agents (bbnoded) */
    double agents_down_after;
    double agents_interval;
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
    S(listen,   false, cfg_t, _, _, "Where the HTTP/JSON API listens.") \
    S(state,    false, cfg_t, _, _, "Durable state (SQLite database).") \
    S(auth,     false, cfg_t, _, _, "Authentication of callers (MUNGE).") \
    S(log,      false, cfg_t, _, _, "Logging.") \
    S(policy,   false, cfg_t, _, _, "Scheduling policy and allocation.") \
    S(platform, false, cfg_t, _, _, "The compute side as the scheduler models it.") \
    S(limits,   false, cfg_t, _, _, "Timeouts and limits.") \
    S(stage,    false, cfg_t, _, _, "Stage-in and stage-out.") \
    S(mover,    false, cfg_t, _, _, \
      "The data mover: stage-in/out copies inside bbmgrd, shared between jobs by SFQ(D)+.") \
    S(agents,   false, cfg_t, _, _, \
      "Buffer-node agents (bbnoded(8)) of the node sets with agent: true.") \
    S(nodes,    true, cfg_nodeset_t, nodes, nnodes, \
      "Buffer nodes: a list of sets of nodes sharing the same properties.") \
    S(devices,  true, cfg_device_t, devices, ndevices, \
      "Device profiles: sensitivity of a storage device to concurrent streams.") \
    S(pools,    true, cfg_pool_t, pools, npools, \
      "Pools of buffer nodes, as Slurm's burst_buffer pools.")

#define BBMGR_CONFIG_KEYS(X) \
    X(listen, cfg_t, listen_address, "address", CFG_STRING, "127.0.0.1", chk_address, false, \
      "TCP address (IPv4 or IPv6 literal, or localhost) the API listens on; empty: no TCP listener.") \
    X(listen, cfg_t, listen_port, "port", CFG_INT, "7470", chk_port, false, \
      "TCP port of the API (0: let the kernel choose, logged at start).") \
    X(listen, cfg_t, listen_unix, "unix_socket", CFG_STRING, "/run/harmonia/bbmgrd.sock", chk_path_or_empty, false, \
      "Unix socket for the local slurmctld (mode 0666, access is decided by MUNGE); empty: none.") \
    X(listen, cfg_t, listen_admin_socket, "admin_socket", CFG_STRING, "", chk_path_or_empty, false, \
      "A second unix socket that only root and the SlurmUser can connect to (mode 0600, owned by the SlurmUser), with its own limits.max_connections: point slurmctld's burst-buffer plugin at it and no user holding connections elsewhere can keep its requests out; requests still carry MUNGE credentials; empty: none.") \
    X(state, cfg_t, state_dir, "dir", CFG_STRING, "/var/lib/harmonia", chk_path, false, \
      "Directory of the state database state.db (created mode 0700 if missing).") \
    X(state, cfg_t, state_durable, "durable", CFG_BOOL, "true", NULL, false, \
      "Commit with synchronous=FULL (fsync before every acknowledgement); false only for throw-away test setups.") \
    X(auth, cfg_t, auth_type, "type", CFG_STRING, "munge", chk_auth_type, false, \
      "munge (every request carries a MUNGE credential) or none (development only: refused unless every listener is loopback).") \
    X(auth, cfg_t, auth_munge_socket, "munge_socket", CFG_STRING, "", chk_path_or_empty, false, \
      "Socket of munged; empty: libmunge's default (/run/munge/munge.socket.2).") \
    X(auth, cfg_t, auth_slurm_user, "slurm_user", CFG_STRING, "slurm", chk_user, true, \
      "SlurmUser (name or uid): with root, the only callers with full rights.") \
    X(auth, cfg_t, auth_metrics_public, "metrics_public", CFG_BOOL, "true", NULL, true, \
      "Serve /metrics without a credential (for Prometheus scrapers).") \
    X(auth, cfg_t, auth_session_ttl, "session_ttl", CFG_DURATION, "5m", chk_session_ttl, true, \
      "Lifetime of a connection-bound session (doc/api.md, Sessions): a client that authenticated one request with MUNGE on a keep-alive connection may authenticate the next ones on that connection with the token it got back, for this long; 0: no sessions, a MUNGE credential on every request.") \
    X(log, cfg_t, log_level, "level", CFG_STRING, "info", chk_log_level, true, \
      "error, warning, info or debug (scheduling decisions and their reasons).") \
    X(log, cfg_t, log_file, "file", CFG_STRING, "", chk_path_or_empty, true, \
      "Log file (reopened on SIGHUP, for logrotate); empty: stderr.") \
    X(log, cfg_t, log_format, "format", CFG_STRING, "text", chk_log_format, true, \
      "text (one line key=value) or json (one object per line).") \
    X(policy, cfg_t, policy_id, "id", CFG_STRING, "auto", chk_policy, true, \
      "Scheduling policy id (doc/design.md section 3), parameters included: auto (chooses among the others as the workload goes, doc/policies.md), fairshare, fcfs, minmax:0.5, set10, ...") \
    X(policy, cfg_t, policy_overprovision, "overprovision", CFG_DOUBLE, "1.0", chk_overprovision, true, \
      "Over-provisioning factor: a job gets up to this many times the buffer nodes its capacity needs, when spare nodes exist.") \
    X(platform, cfg_t, platform_compute_nodes, "compute_nodes", CFG_INT, "1024", chk_positive_int, true, \
      "Compute nodes N of the cluster (scheduler model).") \
    X(platform, cfg_t, platform_node_bandwidth, "node_bandwidth", CFG_BANDWIDTH, "1 GB/s", chk_positive, true, \
      "I/O bandwidth b of one compute node (scheduler model).") \
    X(platform, cfg_t, platform_pfs_bandwidth, "pfs_bandwidth", CFG_BANDWIDTH, "100 GB/s", chk_positive, true, \
      "Bandwidth B of the shared I/O system (scheduler model).") \
    X(limits, cfg_t, limits_max_body, "max_body", CFG_SIZE, "64KiB", chk_body, true, \
      "Largest request body accepted; larger bodies get 413 and the connection is closed.") \
    X(limits, cfg_t, limits_max_connections, "max_connections", CFG_INT, "4096", chk_positive_int, false, \
      "Concurrent connections; more are refused at accept.") \
    X(limits, cfg_t, limits_max_connections_per_uid, "max_connections_per_uid", CFG_INT, "32", chk_positive_int, true, \
      "Concurrent connections one uid may hold on the unix sockets (known from the socket's peer credentials); more are closed at once. Root and the SlurmUser are not limited.") \
    X(limits, cfg_t, limits_connection_timeout, "connection_timeout", CFG_DURATION, "10s", chk_positive, false, \
      "Idle or slow connections are closed after this long without progress.") \
    X(limits, cfg_t, limits_request_deadline, "request_deadline", CFG_DURATION, "30s", chk_positive, true, \
      "A request's headers and body must have arrived this long after its connection opened (or after the previous reply on it); else the connection is closed, however steadily a client sends a byte now and then.") \
    X(limits, cfg_t, limits_max_wait, "max_wait", CFG_DURATION, "60s", chk_positive, true, \
      "Longest long-poll wait a request may ask for (?wait= or \"wait\").") \
    X(limits, cfg_t, limits_max_jobs, "max_jobs", CFG_INT, "100000", chk_positive_int, true, \
      "Registered (not yet ended) jobs; more registrations get 503.") \
    X(limits, cfg_t, limits_max_persistent, "max_persistent", CFG_INT, "1000", chk_positive_int, true, \
      "Persistent buffers.") \
    X(limits, cfg_t, limits_persistent_per_user, "persistent_per_user", CFG_INT, "100", chk_positive_int, true, \
      "Persistent buffers one user may own; more creations get 403 (administrators creating for themselves are not counted against it).") \
    X(limits, cfg_t, limits_persistent_capacity_per_user, "persistent_capacity_per_user", CFG_SIZE, "0B", NULL, true, \
      "Total capacity of the persistent buffers one user may own; a creation beyond it gets 403; 0: no limit.") \
    X(limits, cfg_t, limits_grant_timeout, "grant_timeout", CFG_DURATION, "1h", chk_positive, true, \
      "A granted phase not reported finished within this time is expired (its share is given back).") \
    X(limits, cfg_t, limits_history_keep, "history_keep", CFG_INT, "100", chk_positive_int, true, \
      "Observations kept per user and job name for learned defaults.") \
    X(limits, cfg_t, limits_keep_closed, "keep_closed", CFG_DURATION, "1d", chk_positive, true, \
      "Closed phases, finished transfers and ended jobs are kept in state.db this long after they closed, then removed (GET /v1/phases/{pid} of a removed phase is 404); a done stage-out not yet durable, or one that could not be made durable, and the job it belongs to are kept.") \
    X(limits, cfg_t, limits_keep_closed_count, "keep_closed_count", CFG_INT, "100000", chk_positive_int, true, \
      "At most this many closed phases, and as many finished transfers, are kept (the oldest go first), whatever their age.") \
    X(limits, cfg_t, limits_threads, "threads", CFG_INT, "2", chk_threads, false, \
      "HTTP worker threads (each serves many connections).") \
    X(stage, cfg_t, stage_mode, "mode", CFG_STRING, "mover", chk_stage_mode, true, \
      "mover: bbmgrd copies the data (see section mover); scheduled: a transfer is marked done at its scheduled start without copying; immediate: done at once (both for development).") \
    X(mover, cfg_t, mover_threads, "threads", CFG_INT, "8", chk_threads, false, \
      "I/O worker threads of the mover.") \
    X(mover, cfg_t, mover_chunk, "chunk", CFG_SIZE, "4MiB", chk_chunk, false, \
      "Copy unit: each chunk of a file is one SFQ(D)+ request (cost = its bytes).") \
    X(mover, cfg_t, mover_depth, "depth", CFG_INT, "128", chk_depth, false, \
      "SFQ(D)+ depth D in slots of 256 KiB: at most D x 256 KiB of copy requests in flight (a larger chunk still goes, alone).") \
    X(mover, cfg_t, mover_verify, "verify", CFG_STRING, "checksum", chk_verify, false, \
      "checksum: each block of a copy is read back right after it is written and its checksum compared with that of the source read, and the size is checked; size: the size only (copy_file_range); none.") \
    X(mover, cfg_t, mover_checksum, "checksum", CFG_STRING, "crc32c", chk_checksum, false, \
      "crc32c (32 bits, the CPU's crc32 instruction where it has one) or xxh64 (64 bits, faster where crc32c runs in software): detects corruption, not tampering (not a cryptographic hash).") \
    X(mover, cfg_t, mover_max_rate, "max_rate", CFG_BANDWIDTH, "0 B/s", chk_rate, false, \
      "Total copy rate cap of the mover (0 B/s: none); for tests and benchmarks.") \
    X(mover, cfg_t, mover_durable_stage_in, "durable_stage_in", CFG_BOOL, "false", NULL, false, \
      "true: a stage-in into a job's buffer is on disk (fsync) before it is done, as stage-ins into persistent buffers always are; false: it is complete, verified and visible but may still be in the page cache (the buffer dies with the job).") \
    X(mover, cfg_t, mover_durable_before_done, "durable_before_done", CFG_BOOL, "false", NULL, false, \
      "true: a stage-out is on disk (fsync of every file before its rename, then of the directories) before it is done; false: it is done once complete, verified and under its final names, and made durable right after (the transfer's durable flag), before the job's buffer may be removed; a restart finishes what a crash cut.") \
    X(mover, cfg_t, mover_max_entries, "max_entries", CFG_INT, "1000000", chk_positive_int, false, \
      "Files, directories and symlinks one transfer may hold (each costs the mover about 200 bytes of memory while it runs); a larger tree fails the transfer.") \
    X(agents, cfg_t, agents_down_after, "down_after", CFG_DURATION, "10s", chk_positive, true, \
      "An agent that has not reported for this long is marked down: its node is drained and its transfers fail with the reason.") \
    X(agents, cfg_t, agents_interval, "interval", CFG_DURATION, "0.5s", chk_agent_interval, true, \
      "How often an agent reports its device status and asks for work (at most 1s).") \
    X(agents, cfg_t, agents_manager, "manager", CFG_STRING, "", NULL, true, \
      "URL of bbmgrd for the agents (http://host:port); empty: listen.address and listen.port.") \
    X(nodes, cfg_nodeset_t, names, "names", CFG_HOSTLIST, NULL, NULL, true, \
      "Host list of the nodes of this set (bb[01-04]) or a YAML list of them.") \
    X(nodes, cfg_nodeset_t, capacity, "capacity", CFG_SIZE, NULL, chk_positive_size, true, \
      "Capacity of each node.") \
    X(nodes, cfg_nodeset_t, bandwidth, "bandwidth", CFG_BANDWIDTH, NULL, chk_positive, true, \
      "Bandwidth of each node, one stream alone.") \
    X(nodes, cfg_nodeset_t, device, "device", CFG_STRING, "", NULL, true, \
      "Name of a device profile (section devices); empty: insensitive to concurrency.") \
    X(nodes, cfg_nodeset_t, mount, "mount", CFG_STRING, NULL, chk_path, true, \
      "Where the nodes' storage is reachable from compute nodes; a job's directory is MOUNT/JOBID; %n in it stands for the node's name (a mount per node).") \
    X(nodes, cfg_nodeset_t, pool, "pool", CFG_STRING, "default", chk_name, true, \
      "Pool the nodes belong to (section pools).") \
    X(nodes, cfg_nodeset_t, agent, "agent", CFG_BOOL, "false", NULL, false, \
      "true: each node of the set runs bbnoded(8), which owns its mount (one mount per node) and runs its transfers; false: bbmgrd does it.") \
    X(devices, cfg_device_t, name, "name", CFG_STRING, NULL, chk_name, true, \
      "Name of the profile, used by nodes' device key.") \
    X(devices, cfg_device_t, msca, "msca", CFG_DOUBLES, NULL, chk_msca, true, \
      "MSCA(c) = BW(1)/BW(c) - 1 for c = 1..n (n <= 16, first value 0), as measured by bbmgr calibrate.") \
    X(pools, cfg_pool_t, name, "name", CFG_STRING, NULL, chk_name, true, \
      "Name of the pool (Slurm's Pool=).") \
    X(pools, cfg_pool_t, granularity, "granularity", CFG_SIZE, "1MiB", chk_positive_size, true, \
      "Allocations in this pool are rounded up to a multiple of this, per node.")

/* Read and check FILE.  On error returns NULL, errno set, and err->text is
 * "FILE:LINE:COL: reason" (or "FILE: reason" when no position applies). */
cfg_t *cfg_load(const char *path, hu_error_t *err);
void cfg_destroy(cfg_t *cfg);       /* accepts NULL, keeps errno */

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
