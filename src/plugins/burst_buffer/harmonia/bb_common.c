/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slurm's burst buffer common code (burst_buffer.conf parsing, pools, the
 * packing behind "scontrol show burst"), compiled from the configured Slurm
 * source tree given to configure (--with-slurm-source).  It is not part of
 * this project's source and is not installed by Slurm; every in-tree burst
 * buffer plugin compiles it in the same way.
 */
#include "src/plugins/burst_buffer/common/burst_buffer_common.c"
