/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hostlist_helpers.c — see hostlist_helpers.h. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "hostlist_helpers.h"

const char *hl_joined(const char *expr, const hu_hostlist_opts_t *o, hu_hostlist_fail_t *fail,
                      hu_error_t *err)
{
    static char buf[8192];
    hu_error_t e = { "" };
    char **v = NULL;
    int n = -1;

    if (hu_hostlist_expand(expr, o, &v, &n, fail, &e) < 0) {
        ck_assert_ptr_null(v);
        ck_assert_int_eq(n, -1);
        ck_assert(e.text[0]);
        snprintf(buf, sizeof(buf), "ERR:%s", e.text);
    } else {
        buf[0] = '\0';
        for (int i = 0; i < n; i++) {
            if (i)
                strcat(buf, " ");
            strcat(buf, v[i]);
        }
        hu_hostlist_free(v, n);
    }
    if (err)
        *err = e;
    return buf;
}
