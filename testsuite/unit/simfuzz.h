/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * simfuzz.h — the workload fuzzer of the scheduling core (doc/fuzzing-sim.md):
 * random bbsim workloads from a seed, run under every policy, with the invariants
 * of a run checked on each.  Used by test_sim_fuzz (a fixed-seed run in 'make
 * check', a long random one in 'make fuzz-long') and by bench/bench_sim_fuzz.
 */
#ifndef HARMONIA_SIMFUZZ_H
#define HARMONIA_SIMFUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/sim.h"

/* The policy ids every workload runs under (NULL-terminated). */
extern const char *const sf_policies[];

/* The YAML text of workload 'seed' (a bbsim workload: 'bbsim run' reproduces it)
 * into buf.  Returns its length, or -1 when 'cap' is too small. */
int sf_workload(uint64_t seed, char *buf, size_t cap);

/* Run the workload 'yaml' under 'policy' twice (draws of 'seed') and check the
 * invariants: every job completes with all its phases, the bytes moved equal its
 * volumes, no job gets more than min(beta b, B) and the jobs together no more than
 * B at any instant, dilation >= 1, SysEff <= the upper limit <= 1, every figure
 * finite, the same result both times.  Returns 0, or -1 with 'why' saying which
 * invariant broke.  *decide_max (if not NULL) gets the longest decision, s. */
int sf_check(const char *yaml, size_t len, const char *policy, char *why, size_t cap,
             double *decide_max);

/* What sf_run() (and so sf_check()) sets in every policy it runs, 0 leaving the
 * policy's default: hs_policy_t.max_work (the decision budget) and
 * hs_policy_t.starve_factor (< 0: no starvation bound).  The findings that need
 * them set them around their run. */
extern uint64_t sf_max_work;
extern double sf_starve_factor;

/* Load, expand and run once: 0 with *res filled (sim_result_clear() it, then
 * wl_jobs_destroy(*jobs), wl_destroy(*wl)), or -1 with 'why'. */
int sf_run(const char *yaml, size_t len, const char *policy, bool record, wl_t **wl,
           wl_jobs_t **jobs, sim_result_t *res, char *why, size_t cap);

#endif
