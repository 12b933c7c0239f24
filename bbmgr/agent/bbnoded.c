/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bbnoded — the Harmonia buffer-node agent (bbnoded(8), doc/bbnoded.md).
 *
 * One per buffer node.  Reads the same bbmgr.yaml as bbmgrd (its node set, the
 * mover and agents sections, auth), runs in the foreground (systemd Type=notify:
 * READY=1 once its mover runs), and exchanges with bbmgrd every agents.interval.
 * Signal handlers only set flags: TERM/INT stop (unfinished transfers are run
 * again by the next agent process), HUP reopens the log file.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>

#include "agent.h"
#include "config.h"
#include "libhutil/options.h"
#include "log.h"
#include "util.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG SYSCONFDIR "/harmonia/bbmgr.yaml"

static const hu_option_t options[] = {
    { "config", required_argument, 'c', "FILE", "configuration (default " DEFAULT_CONFIG ")" },
    { "node", required_argument, 'n', "NAME",
      "this buffer node's name in the configuration\n"
      "(default: the host name up to its first dot)" },
    { "manager", required_argument, 'm', "URL",
      "bbmgrd (default: agents.manager, else "
      "listen.address\nand listen.port of the configuration)" },
    { "log-file", required_argument, 'l', "FILE",
      "log there, '-': stderr (default: log.file, "
      "which is\nbbmgrd's too when both run on one host)" },
    { "diskstats", required_argument, 1, "FILE",
      "block device counters (default /proc/diskstats)" },
    { "verbose", no_argument, 'v', NULL, "log at debug level" },
    { "version", no_argument, 'V', NULL, "print the version and exit" },
    { "foreground", no_argument, 'f', NULL, NULL }, /* bbmgrd's -f, never listed */
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 23,
                     "Usage: bbnoded [OPTIONS]\n"
                     "The Harmonia buffer-node agent (always in the foreground).\n\n");
    fprintf(f, "\nSignals: TERM/INT stop, HUP reopens the log.  See bbnoded(8), bbmgr.yaml(5).\n");
}

/* Sleep up to s seconds; a signal ends it early. */
static void nap(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    if (s > 0)
        nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    const char *path = DEFAULT_CONFIG, *node = NULL, *url = NULL, *diskstats = NULL;
    const char *logfile = NULL;
    char host[256];
    int verbose = 0, opt, rc = 1;
    hu_error_t err = { "" };
    cfg_t *cfg = NULL;
    agent_t *agent = NULL;
    hu_getopt_t g;

    hu_getopt_init(&g, options, "");
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 'n':
            node = optarg;
            break;
        case 'm':
            url = optarg;
            break;
        case 1:
            diskstats = optarg;
            break;
        case 'l':
            logfile = strcmp(optarg, "-") ? optarg : "";
            break;
        case 'f':
            break;
        case 'v':
            verbose = 1;
            break;
        case 'V':
            printf("bbnoded %s\n", PACKAGE_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (!node) {
        if (gethostname(host, sizeof(host)) < 0) {
            fprintf(stderr, "bbnoded: gethostname: %s\n", strerror(errno));
            return 1;
        }
        host[sizeof(host) - 1] = '\0';
        host[strcspn(host, ".")] = '\0';
        node = host;
    }
    if (!(cfg = cfg_load(path, &err))) {
        fprintf(stderr, "bbnoded: %s\n", err.text);
        return 1;
    }
    if (!logfile)
        logfile = cfg->log_file;
    if (bl_configure(logfile, verbose ? "debug" : cfg->log_level, cfg->log_format, &err) < 0) {
        fprintf(stderr, "bbnoded: log: %s\n", err.text);
        goto out;
    }
    util_daemon_signals();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        bl_error("libcurl could not start");
        goto out;
    }
    agent_opts_t o = { .cfg = cfg, .node = node, .url = url, .diskstats = diskstats };
    if (!(agent = agent_create(&o, &err))) {
        bl_error("%s", err.text);
        goto out_curl;
    }
    util_notify("READY=1");
    bl_info("ready");
    while (!util_got_stop) {
        double t0 = hu_mono();
        if (util_got_hup) {
            util_got_hup = 0;
            if (bl_configure(logfile, verbose ? "debug" : cfg->log_level, cfg->log_format, &err)
                < 0)
                bl_error("log: %s", err.text);
        }
        agent_step(agent);
        nap(agent_interval(agent) - (hu_mono() - t0));
    }
    bl_info("signal %d: stopping", (int)util_got_stop);
    util_notify("STOPPING=1");
    rc = 0;
    agent_destroy(agent);
out_curl:
    curl_global_cleanup();
out:
    cfg_destroy(cfg);
    bl_close();
    return rc;
}
