/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef _BBH_CONF_H
#define _BBH_CONF_H

#include <stdbool.h>

typedef struct {
    bool configured;         /* harmonia.conf present: talk to bbmgrd */
    char *path;              /* the file read */
    char *url;               /* BbmgrURL: how slurmctld reaches bbmgrd */
    char *job_url;           /* JobURL: HARMONIA_URL given to jobs */
    char *munge_socket;      /* MungeSocket (default: slurm.conf AuthInfo) */
    int timeout;             /* Timeout: seconds per request */
    int retry_interval;      /* RetryInterval: seconds before a retry */
    int poll_interval;       /* PollInterval: seconds between stage polls */
    bool stage_spread;       /* StageSpread: spread a multi-node job's stage
				 * transfers over its buffer nodes */
    bool interpose;          /* Interpose: the interposer is on for jobs that
				 * do not say (iohints interpose=yes|no) */
    char *interpose_paths;   /* InterposePaths: PFS prefixes it counts */
    char *interpose_library; /* InterposeLibrary: the libharmonia-preload.so
				  * jobs get (default: the installed one) */
} bbh_conf_t;

/* Read 'path'.  0 on success (conf->configured false when the file does not
 * exist); -1 with *err (xmalloc'd) naming file:line:column and the problem. */
extern int bbh_conf_load(const char *path, bbh_conf_t *conf, char **err);
extern void bbh_conf_free(bbh_conf_t *conf);

#endif
