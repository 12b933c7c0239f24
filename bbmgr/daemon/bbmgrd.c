/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bbmgrd — the Harmonia burst-buffer manager daemon.
 *
 * Runs in the foreground (systemd Type=notify): READY=1 is sent once the state
 * database is open and recovered and the API listens.  Signal handlers only set
 * flags; the main loop acts on them: SIGTERM/SIGINT stop cleanly, SIGHUP reloads
 * bbmgr.yaml (keeping the running configuration if the new one is bad) and
 * reopens the log file.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "core.h"
#include "libhutil/options.h"
#include "log.h"
#include "mover.h"
#include "state.h"
#include "util.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG SYSCONFDIR "/harmonia/bbmgr.yaml"

typedef struct {
    api_t *api;
} ctx_t;

static void on_commit(uint64_t seq, bool ok, void *arg)
{
    ctx_t *ctx = arg;
    api_t *api = __atomic_load_n(&ctx->api, __ATOMIC_ACQUIRE);
    if (api)
        api_on_commit(seq, ok, api);
}

static const hu_option_t options[] = {
    { "config", required_argument, 'c', "FILE", "configuration (default " DEFAULT_CONFIG ")" },
    { "foreground", no_argument, 'f', NULL, "accepted for compatibility: bbmgrd never forks" },
    { "verbose", no_argument, 'v', NULL, "log at debug level (scheduling decisions and reasons)" },
    { "check", no_argument, 'C', NULL, "check the configuration and exit" },
    { "version", no_argument, 'V', NULL, "print the version and exit" },
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 22,
                     "Usage: bbmgrd [OPTIONS] [CONFIG]\n"
                     "The Harmonia burst-buffer manager daemon (always in the foreground).\n\n");
    fprintf(f, "\nSignals: TERM/INT stop, HUP reloads the configuration and reopens the log.\n"
               "See bbmgrd(8), bbmgr.yaml(5).\n");
}

static void reload(const char *path, core_t *core, api_t *api, int verbose)
{
    hu_error_t err = { "" };
    cfg_t *nc = cfg_load(path, &err);
    if (!nc) {
        bl_error("reload: %s: keeping the running configuration", err.text);
        return;
    }
    /* log settings first: the rest reports through it */
    if (bl_configure(nc->log_file, verbose ? "debug" : nc->log_level, nc->log_format, &err) < 0)
        bl_error("reload: log: %s", err.text);
    if (core_reconfigure(core, nc, &err) < 0) {
        bl_error("reload: %s: keeping the running configuration", err.text);
        cfg_destroy(nc);
        return;
    }
    core_lock(core);
    api_reconfigure(api, core_cfg(core));
    core_unlock(core);
}

int main(int argc, char **argv)
{
    const char *path = DEFAULT_CONFIG;
    int verbose = 0, check = 0, opt, rc = 1;
    hu_error_t err = { "" };
    cfg_t *cfg = NULL;
    state_t *st = NULL;
    core_t *core = NULL;
    ctx_t ctx = { NULL };
    api_t *api = NULL;
    mover_t *mover = NULL;
    hu_getopt_t g;

    hu_getopt_init(&g, options, "");
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 'f':
            break;
        case 'v':
            verbose++;
            break;
        case 'C':
            check = 1;
            break;
        case 'V':
            printf("bbmgrd %s\n", PACKAGE_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    /* "bbmgrd -f FILE": a lone operand is the configuration file */
    if (optind + 1 == argc)
        path = argv[optind++];
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (!(cfg = cfg_load(path, &err))) {
        fprintf(stderr, "bbmgrd: %s\n", err.text);
        return 1;
    }
    if (check) {
        printf("%s: OK\n", path);
        cfg_destroy(cfg);
        return 0;
    }
    if (bl_configure(cfg->log_file, verbose ? "debug" : cfg->log_level, cfg->log_format, &err)
        < 0) {
        fprintf(stderr, "bbmgrd: log.file: %s\n", err.text);
        cfg_destroy(cfg);
        return 1;
    }

    util_daemon_signals();

    bl_info("bbmgrd %s starting: config %s, state %s, policy %s, auth %s", PACKAGE_VERSION, path,
            cfg->state_dir, cfg->policy_id, cfg->auth_type);
    {
        /* connections, the mover's open files and the walks of teardowns (nftw keeps
         * a descriptor per level) all take descriptors: the soft limit goes up to the
         * hard one */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rlim_t was = rl.rlim_cur;
            rl.rlim_cur = rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
                bl_info("open files limit raised from %ju to %ju", (uintmax_t)was,
                        (uintmax_t)rl.rlim_cur);
        }
    }
    if (!(st = state_open(cfg->state_dir, cfg->state_durable, &err))) {
        bl_error("state: %s", err.text);
        goto out;
    }
    if (state_start(st, on_commit, &ctx, &err) < 0) {
        bl_error("state: %s", err.text);
        goto out;
    }
    if (!(core = core_create(cfg, st, &err))) {
        cfg = NULL;
        bl_error("%s", err.text);
        goto out;
    }
    cfg = NULL; /* the core owns it */
    if (core_recover(core, &err) < 0) {
        bl_error("recovery: %s", err.text);
        goto out;
    }
    if (state_sync(st) < 0) {
        bl_error("state: the recovery could not be committed");
        goto out;
    }
    if (!(mover = mover_create(core_cfg(core), &err))) {
        bl_error("%s", err.text);
        goto out;
    }
    core_lock(core);
    core_set_mover(core, mover);
    core_unlock(core);
    if (!(api = api_create(core, st, core_cfg(core), &err))) {
        bl_error("api: %s", err.text);
        goto out;
    }
    __atomic_store_n(&ctx.api, api, __ATOMIC_RELEASE);
    /* commits that happened before the api existed */
    api_on_commit(state_committed(st), true, api);
    core_lock(core);
    core_set_notify(core, api_on_phase, api);
    core_unlock(core);
    if (*core_cfg(core)->listen_address)
        bl_info("listening on http://%s:%d/", core_cfg(core)->listen_address, api_tcp_port(api));
    if (*core_cfg(core)->listen_unix)
        bl_info("listening on unix:%s", core_cfg(core)->listen_unix);
    util_notify("READY=1\nSTATUS=serving");
    bl_info("ready");

    rc = 0;
    unsigned long ticks = 0;
    while (!util_got_stop) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        if (util_got_hup) {
            util_got_hup = 0;
            util_notify("RELOADING=1");
            bl_info("SIGHUP: reloading %s", path);
            reload(path, core, api, verbose);
            util_notify("READY=1");
        }
        if (api_failed(api)) {
            bl_error("the state database failed: stopping (a restart recovers the "
                     "last committed state)");
            rc = 1;
            break;
        }
        core_tick(core);
        api_tick(api);
        if (++ticks % 20 == 0) /* about once a second */
            state_checkpoint(st);
        else
            state_checkpoint_bg(st);
        nanosleep(&ts, NULL);
    }
    if (util_got_stop)
        bl_info("signal %d: stopping", (int)util_got_stop);
    util_notify("STOPPING=1");
out:
    if (api) {
        api_stop(api);
        core_lock(core);
        core_set_notify(core, NULL, NULL);
        core_unlock(core);
    }
    /* the mover stops before the state: its unfinished transfers stay 'running' and
     * are queued again at the next start */
    if (mover) {
        core_lock(core);
        core_set_mover(core, NULL);
        core_unlock(core);
        mover_destroy(mover);
    }
    if (st && state_sync(st) < 0)
        rc = 1;
    state_close(st);
    __atomic_store_n(&ctx.api, NULL, __ATOMIC_RELEASE);
    api_destroy(api);
    core_destroy(core);
    cfg_destroy(cfg);
    bl_info("stopped");
    bl_close();
    return rc ? 1 : 0;
}
