/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_conf.c - harmonia.conf, the plugin's own settings (how to reach bbmgrd).
 *
 *  Read from the directory of slurm.conf.  Lines are Key=Value; '#' starts a
 *  comment.  A missing file means "no manager daemon": requests are validated
 *  and jobs pass through stage-in and stage-out with no buffer behind them.
 *  An unknown key or a bad value is an error naming the line and column, and
 *  slurmctld refuses to start (or to reconfigure) with it.
\*****************************************************************************/

#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm/slurm.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "bbh_conf.h"

static const char *keys[] = { "BbmgrURL",       "JobURL",           "MungeSocket", "Timeout",
                              "RetryInterval",  "PollInterval",     "StageSpread", "Interpose",
                              "InterposePaths", "InterposeLibrary", NULL };

extern void bbh_conf_free(bbh_conf_t *conf)
{
    if (!conf)
        return;
    xfree(conf->url);
    xfree(conf->job_url);
    xfree(conf->munge_socket);
    xfree(conf->interpose_paths);
    xfree(conf->interpose_library);
    xfree(conf->path);
    memset(conf, 0, sizeof(*conf));
}

/* Every ':'-separated item of v is an absolute path. */
static bool _abs_list(const char *v)
{
    for (const char *p = v;; p++) {
        if (*p != '/')
            return false;
        if (!(p = strchr(p, ':')))
            return true;
    }
}

/* "socket=/path,..." from slurm.conf AuthInfo */
static char *_authinfo_socket(void)
{
    char *p, *s, *end;

    if (!slurm_conf.authinfo || !(p = strstr(slurm_conf.authinfo, "socket=")))
        return NULL;
    s = p + strlen("socket=");
    end = strchr(s, ',');
    return end ? xstrndup(s, end - s) : xstrdup(s);
}

static int _uint_value(const char *v, int min, int max, int *out)
{
    char *end;
    long l;

    errno = 0;
    l = strtol(v, &end, 10);
    if (errno || end == v || *end || l < min || l > max)
        return -1;
    *out = (int)l;
    return 0;
}

extern int bbh_conf_load(const char *path, bbh_conf_t *conf, char **err)
{
    FILE *f;
    char line[4096];
    int lineno = 0;

    memset(conf, 0, sizeof(*conf));
    conf->timeout = 5;
    conf->retry_interval = 5;
    conf->poll_interval = 1;
    conf->path = xstrdup(path);

    if (!(f = fopen(path, "r"))) {
        if (errno == ENOENT) {
            conf->configured = false;
            return 0;
        }
        xstrfmtcat(*err, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = line, *key, *val, *eq, *e;
        int col;

        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            xstrfmtcat(*err, "%s:%d:1: line longer than %zu bytes", path, lineno, sizeof(line) - 1);
            goto fail;
        }
        if ((e = strchr(p, '#')))
            *e = '\0';
        while (isspace((unsigned char)*p))
            p++;
        e = p + strlen(p);
        while (e > p && isspace((unsigned char)e[-1]))
            *--e = '\0';
        if (!*p)
            continue;
        col = (int)(p - line) + 1;
        if (!(eq = strchr(p, '='))) {
            xstrfmtcat(*err, "%s:%d:%d: expected Key=Value", path, lineno, col);
            goto fail;
        }
        *eq = '\0';
        key = p;
        val = eq + 1;
        for (e = eq; e > key && isspace((unsigned char)e[-1]);)
            *--e = '\0';
        while (isspace((unsigned char)*val))
            val++;
        int known = 0;
        for (int i = 0; keys[i]; i++)
            if (!strcasecmp(keys[i], key))
                known = 1;
        if (!known) {
            xstrfmtcat(*err,
                       "%s:%d:%d: unknown key '%s' (known: BbmgrURL, JobURL, MungeSocket, Timeout, "
                       "RetryInterval, PollInterval, StageSpread, Interpose, InterposePaths, "
                       "InterposeLibrary)",
                       path, lineno, col, key);
            goto fail;
        }
        int vcol = (int)(val - line) + 1;
        if (!*val) {
            xstrfmtcat(*err, "%s:%d:%d: %s has no value", path, lineno, vcol, key);
            goto fail;
        }
        if (!strcasecmp(key, "BbmgrURL") || !strcasecmp(key, "JobURL")) {
            if (strncmp(val, "http://", 7) && strncmp(val, "unix:/", 6)) {
                xstrfmtcat(*err, "%s:%d:%d: %s '%s' must start with http:// or unix:/", path,
                           lineno, vcol, key, val);
                goto fail;
            }
            if (!strcasecmp(key, "JobURL") && !strncmp(val, "unix:", 5)) {
                xstrfmtcat(*err,
                           "%s:%d:%d: JobURL must be an http:// URL reachable from compute nodes",
                           path, lineno, vcol);
                goto fail;
            }
            if (!strcasecmp(key, "BbmgrURL")) {
                xfree(conf->url);
                conf->url = xstrdup(val);
            } else {
                xfree(conf->job_url);
                conf->job_url = xstrdup(val);
            }
        } else if (!strcasecmp(key, "StageSpread") || !strcasecmp(key, "Interpose")) {
            bool *dst = !strcasecmp(key, "Interpose") ? &conf->interpose : &conf->stage_spread;
            if (!strcasecmp(val, "yes"))
                *dst = true;
            else if (!strcasecmp(val, "no"))
                *dst = false;
            else {
                xstrfmtcat(*err, "%s:%d:%d: %s '%s' must be yes or no", path, lineno, vcol, key,
                           val);
                goto fail;
            }
        } else if (!strcasecmp(key, "InterposePaths")) {
            if (!_abs_list(val)) {
                xstrfmtcat(*err,
                           "%s:%d:%d: InterposePaths '%s' must be absolute paths separated by ':'",
                           path, lineno, vcol, val);
                goto fail;
            }
            xfree(conf->interpose_paths);
            conf->interpose_paths = xstrdup(val);
        } else if (!strcasecmp(key, "MungeSocket") || !strcasecmp(key, "InterposeLibrary")) {
            bool munge = !strcasecmp(key, "MungeSocket");
            char **dst = munge ? &conf->munge_socket : &conf->interpose_library;
            if (val[0] != '/') {
                xstrfmtcat(*err, "%s:%d:%d: %s '%s' must be an absolute path", path, lineno, vcol,
                           munge ? "MungeSocket" : "InterposeLibrary", val);
                goto fail;
            }
            xfree(*dst);
            *dst = xstrdup(val);
        } else {
            int *dst = !strcasecmp(key, "Timeout")         ? &conf->timeout
                       : !strcasecmp(key, "RetryInterval") ? &conf->retry_interval
                                                           : &conf->poll_interval;
            if (_uint_value(val, 1, 3600, dst) < 0) {
                xstrfmtcat(*err, "%s:%d:%d: %s '%s' is not a number of seconds from 1 to 3600",
                           path, lineno, vcol, key, val);
                goto fail;
            }
        }
    }
    fclose(f);
    if (!conf->url) {
        xstrfmtcat(*err, "%s: BbmgrURL is missing", path);
        bbh_conf_free(conf);
        return -1;
    }
    if (!conf->job_url && !strncmp(conf->url, "http://", 7))
        conf->job_url = xstrdup(conf->url);
    if (!conf->munge_socket)
        conf->munge_socket = _authinfo_socket();
    conf->configured = true;
    return 0;
fail:
    fclose(f);
    bbh_conf_free(conf);
    return -1;
}
