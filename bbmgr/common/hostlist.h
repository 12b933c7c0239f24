/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostlist.h — expand Slurm-style host lists: "bb[01-04,07],io1,rack[1-2]n[0-1]".
 */
#ifndef BBMGR_HOSTLIST_H
#define BBMGR_HOSTLIST_H

#include "libhutil/hutil.h"

#define HOSTLIST_MAX 65536      /* names per expression (refuses "n[0-999999999]") */

/* Expand expr into a malloc'd array of malloc'd names (*names, *count), in the order
 * written.  Returns 0, or -1 with errno = EINVAL/ERANGE/ENOMEM and err filled. */
int hostlist_expand(const char *expr, char ***names, int *count, hu_error_t *err);

/* Free what hostlist_expand() returned.  Accepts NULL. */
void hostlist_free(char **names, int count);

#endif /* BBMGR_HOSTLIST_H */
