/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_config.c — libFuzzer harness for bbmgr.yaml (bbmgr/common/config.c, with its
 * host-list expansion and libhutil's unit parsers), read from a file as bbmgrd
 * and bbmgr read it.
 *
 * The oracles (abort() on failure):
 *   - a refused file gives a NUL-terminated message that is not empty;
 *   - a file that loads loads again to a configuration that needs no restart
 *     against the first (cfg_restart_needed() is 0), and its pools and devices
 *     are found by name (cfg_pool_index(), cfg_device_index());
 * and ASan, UBSan and LeakSanitizer watch the rest.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

#define FUZZ_NAME "fuzz_config"
#include "fuzz.h"

static char path[] = "/tmp/fuzz_config.XXXXXX";
static int fd = -1;

static void cleanup(void)
{
    unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if ((fd = mkstemp(path)) < 0)
        FAIL("mkstemp: %m");
    atexit(cleanup);
    bl_set_level(BL_ERROR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hu_error_t err = { "" };
    char why[512];

    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        FAIL("write %s: %m", path);
    cfg_t *a = cfg_load(path, &err);
    if (!a) {
        if (!memchr(err.text, '\0', sizeof(err.text)) || !err.text[0])
            FAIL("refused without a message");
        return 0;
    }
    hu_error_t err2 = { "" };
    cfg_t *b = cfg_load(path, &err2);
    if (!b)
        FAIL("loads once, then not: %s", err2.text);
    if (cfg_restart_needed(a, b, why, sizeof(why)))
        FAIL("the same file needs a restart against itself: %s", why);
    for (int i = 0; i < a->npools; i++)
        if (cfg_pool_index(a, a->pools[i].name) != i)
            FAIL("pool %d (%s) not found by name", i, a->pools[i].name);
    for (int i = 0; i < a->ndevices; i++)
        if (cfg_device_index(a, a->devices[i].name) != i)
            FAIL("device %d (%s) not found by name", i, a->devices[i].name);
    cfg_destroy(a);
    cfg_destroy(b);
    return 0;
}
