/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_hostlist.c — libFuzzer harness for the host-list expansion
 * (src/common/libhutil/hu_hostlist.c: "bb[01-04,7],hd1") with the options of
 * bbmgr.yaml's node names (cfg_hostlist_opts).
 *
 * The oracles (abort() on failure):
 *   - a refused expression gives a message that is not empty, and no names;
 *   - an expanded one gives at least one name, none empty, none holding ',', '['
 *     or ']'; the names joined by ',' expand again to the same names in the same
 *     order (a list of plain names is its own expansion);
 * and ASan, UBSan and LeakSanitizer watch the rest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define FUZZ_NAME "fuzz_hostlist"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';

    hu_error_t err = { "" };
    char **names = NULL;
    int n = 0;
    if (hu_hostlist_expand(expr, &cfg_hostlist_opts, &names, &n, NULL, &err) < 0) {
        if (!err.text[0])
            FAIL("refused without a message");
        if (names)
            FAIL("refused, but names returned");
        free(expr);
        return 0;
    }
    if (n < 1)
        FAIL("expanded to %d names", n);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0])
            FAIL("name %d empty", i);
        if (strpbrk(names[i], ",[]"))
            FAIL("name %d '%s' holds a separator", i, names[i]);
        len += strlen(names[i]) + 1;
    }
    char *joined = malloc(len + 1);
    if (joined) {
        char *e = joined; /* appended at its end: strcat would be quadratic */
        *e = '\0';
        for (int i = 0; i < n; i++) {
            if (i)
                *e++ = ',';
            size_t l = strlen(names[i]);
            memcpy(e, names[i], l + 1);
            e += l;
        }
        char **again = NULL;
        int m = 0;
        hu_error_t err2 = { "" };
        if (hu_hostlist_expand(joined, &cfg_hostlist_opts, &again, &m, NULL, &err2) < 0)
            FAIL("'%s' expands, its names '%s' do not: %s", expr, joined, err2.text);
        if (m != n)
            FAIL("'%s': %d names, joined again %d", expr, n, m);
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], again[i]))
                FAIL("'%s': name %d '%s' became '%s'", expr, i, names[i], again[i]);
        hu_hostlist_free(again, m);
        free(joined);
    }
    hu_hostlist_free(names, n);
    free(expr);
    return 0;
}
