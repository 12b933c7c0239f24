/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_policy.c — policy ids (doc/design.md §3, a contract): parsing, canonical names,
 * the list for --help.  The table that maps a policy kind to its implementation is
 * hs_sched.c's, at the top of libhsched.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"

static const struct {
    const char *name;
    hs_policy_kind_t kind;
} simple_ids[] = {
    { "fairshare", HS_POL_FAIRSHARE },
    { "fcfs", HS_POL_FCFS },
    { "static", HS_POL_STATIC },
    { "roundrobin", HS_POL_ROUNDROBIN },
    { "mindilation", HS_POL_MINDILATION },
    { "maxsyseff", HS_POL_MAXSYSEFF },
    { "set10", HS_POL_SET },
    { "set-fairshare", HS_POL_SET_FAIRSHARE },
    { "priority-sharing", HS_POL_PRIORITY_SHARING },
    { "periodic-throu", HS_POL_PERIODIC_THROU },
    { "periodic-cong", HS_POL_PERIODIC_CONG },
    { "persched", HS_POL_PERSCHED },
    { "harmonia-maxbw", HS_POL_HARMONIA_MAXBW },
    { "harmonia-minstall", HS_POL_HARMONIA_MINSTALL },
    { "harmonia-fairness", HS_POL_HARMONIA_FAIRNESS },
    { "harmonia-buffer-eff", HS_POL_HARMONIA_BUFFER_EFF },
    { "harmonia-priority", HS_POL_HARMONIA_PRIORITY },
    { "auto", HS_POL_AUTO },
};
#define NSIMPLE (sizeof(simple_ids) / sizeof(simple_ids[0]))

/* clang-format off */
static const char *const all_ids[] = {
    "fairshare", "fcfs", "static",
    "roundrobin", "roundrobin-priority",
    "mindilation", "mindilation-priority",
    "maxsyseff", "maxsyseff-priority",
    "minmax:<gamma>", "minmax:<gamma>-priority",
    "set10", "set:<base>", "set-fairshare", "priority-sharing",
    "periodic-throu", "periodic-cong", "persched",
    "harmonia-maxbw", "harmonia-minstall", "harmonia-fairness",
    "harmonia-buffer-eff", "harmonia-priority",
    "auto",
    NULL,
};
/* clang-format on */

const char *const *hs_policy_ids(void)
{
    return all_ids;
}

/* Every error of a policy id is EINVAL. */
#define perr(err, ...) hs_errprintf(err, EINVAL, __VA_ARGS__)

static int parse_number(const char *s, double *out)
{
    char *end;
    double d;

    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    d = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

static int parse_gamma(const char *id, const char *arg, hs_policy_t *p, hu_error_t *err)
{
    double g;

    if (parse_number(arg, &g) < 0)
        return perr(err,
                    "policy '%s': gamma '%s' is not a number "
                    "(expected minmax:<gamma> with 0 <= gamma <= 1)",
                    id, arg);
    if (g < 0 || g > 1)
        return perr(err,
                    "policy '%s': gamma %g is out of range "
                    "(expected 0 <= gamma <= 1)",
                    id, g);
    p->kind = HS_POL_MINMAX;
    p->gamma = g;
    return 0;
}

static bool lookup_simple(const char *s, size_t len, hs_policy_kind_t *kind)
{
    size_t i;

    for (i = 0; i < NSIMPLE; i++) {
        if (strlen(simple_ids[i].name) == len && !strncmp(simple_ids[i].name, s, len)) {
            *kind = simple_ids[i].kind;
            return true;
        }
    }
    return false;
}

int hs_policy_parse(const char *id, hs_policy_t *pol, hu_error_t *err)
{
    static const char suffix[] = "-priority";
    const size_t slen = sizeof(suffix) - 1;
    hs_policy_t p = { .kind = HS_POL_FAIRSHARE, .priority = false, .gamma = 0, .set_base = 10 };
    hs_policy_kind_t kind;
    size_t len;
    char base[128];

    if (!pol)
        return perr(err, "no output policy given");
    if (!id || !*id)
        return perr(err, "empty policy id (try fairshare, fcfs, set10, ...)");
    len = strlen(id);
    if (len >= sizeof(base))
        return perr(err, "policy id is too long (%zu characters)", len);

    if (lookup_simple(id, len, &kind)) { /* includes harmonia-priority */
        p.kind = kind;
        goto done;
    }
    /* <id>-priority (Gainaru §3.1 PRIORITY variants) */
    if (len > slen && !strcmp(id + len - slen, suffix)) {
        memcpy(base, id, len - slen);
        base[len - slen] = '\0';
        if (lookup_simple(base, len - slen, &kind)) {
            if (kind != HS_POL_ROUNDROBIN && kind != HS_POL_MINDILATION && kind != HS_POL_MAXSYSEFF)
                return perr(err,
                            "policy '%s' has no -priority variant (only "
                            "roundrobin, mindilation, maxsyseff and minmax:<gamma> "
                            "have one)",
                            base);
            p.kind = kind;
            p.priority = true;
            goto done;
        }
        if (!strncmp(base, "minmax:", 7)) {
            if (parse_gamma(id, base + 7, &p, err) < 0)
                return -1;
            p.priority = true;
            goto done;
        }
        if (!strcmp(base, "minmax"))
            return perr(err,
                        "policy '%s': minmax needs a threshold: "
                        "minmax:<gamma>-priority with 0 <= gamma <= 1",
                        id);
    }
    if (!strncmp(id, "minmax-priority:", 16)) {
        if (parse_gamma(id, id + 16, &p, err) < 0)
            return -1;
        p.priority = true;
        goto done;
    }
    if (!strncmp(id, "minmax:", 7)) {
        if (parse_gamma(id, id + 7, &p, err) < 0)
            return -1;
        goto done;
    }
    if (!strcmp(id, "minmax"))
        return perr(err, "policy 'minmax' needs a threshold: minmax:<gamma> "
                         "with 0 <= gamma <= 1 (e.g. minmax:0.5)");
    if (!strncmp(id, "set:", 4)) {
        double b;
        if (parse_number(id + 4, &b) < 0 || !(b > 1))
            return perr(err,
                        "policy '%s': the base must be a number > 1 "
                        "(e.g. set:10, set:2)",
                        id);
        p.kind = HS_POL_SET;
        p.set_base = b;
        goto done;
    }
    return perr(err,
                "unknown policy '%s' (known: fairshare fcfs static roundrobin "
                "mindilation maxsyseff minmax:<g> set10 set:<b> set-fairshare "
                "priority-sharing periodic-throu periodic-cong persched harmonia-* auto; "
                "-priority variants of roundrobin mindilation maxsyseff minmax)",
                id);
done:
    *pol = p;
    return 0;
}

const char *hs_policy_name(const hs_policy_t *pol, char *buf, size_t len)
{
    const char *name = NULL;
    size_t i;

    if (!buf || len == 0)
        return NULL;
    if (!pol) {
        snprintf(buf, len, "(none)");
        return buf;
    }
    switch (pol->kind) {
    case HS_POL_MINMAX:
        snprintf(buf, len, "minmax:%g%s", pol->gamma, pol->priority ? "-priority" : "");
        return buf;
    case HS_POL_SET:
        if (pol->set_base == 10 || pol->set_base == 0)
            snprintf(buf, len, "set10");
        else
            snprintf(buf, len, "set:%g", pol->set_base);
        return buf;
    default:
        break;
    }
    for (i = 0; i < NSIMPLE; i++) {
        if (simple_ids[i].kind == pol->kind) {
            name = simple_ids[i].name;
            break;
        }
    }
    if (!name) {
        snprintf(buf, len, "unknown(%d)", (int)pol->kind);
        return buf;
    }
    snprintf(buf, len, "%s%s", name, pol->priority ? "-priority" : "");
    return buf;
}
