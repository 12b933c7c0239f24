/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness for bbsim's workload loader (sim/workload.c): any byte string
 * must be either accepted or refused with a "NAME:LINE:COL: reason" message, never
 * crash, leak or hang.  Accepted small workloads are also expanded (random draws).
 *
 * Build: make -C testsuite/fuzz fuzz_workload (clang -fsanitize=fuzzer,address,undefined)
 * Run:   see doc/fuzzing-sim.md
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hu_error_t err;
    wl_t *wl = wl_load_buffer((const char *)data, size, "fuzz.yaml", &err);

    if (!wl) {
        /* every refusal names the input and a position */
        if (strncmp(err.text, "fuzz.yaml:", 10) != 0) {
            fprintf(stderr, "refusal without a position: '%s'\n", err.text);
            abort();
        }
        return 0;
    }
    long total = 0;
    for (int i = 0; i < wl->napps; i++)
        total += (long)wl->apps[i].count * wl->apps[i].iterations;
    if (total <= 100000) {
        wl_jobs_t *jobs = wl_expand(wl, 1, &err);
        if (jobs) {
            for (int i = 0; i < jobs->njobs; i++) {
                for (int k = 0; k < jobs->jobs[i].iterations; k++) {
                    if (!(jobs->jobs[i].w[k] >= 0) || !(jobs->jobs[i].volume[k] > 0))
                        abort();
                }
            }
        }
        wl_jobs_destroy(jobs);
    }
    wl_destroy(wl);
    return 0;
}
