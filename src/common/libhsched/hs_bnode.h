/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_bnode.h — the buffer nodes of the model (hs_bnode.c), under hs_core.c and
 * hs_decide.c.
 */
#ifndef HARMONIA_HSCHED_BNODE_H
#define HARMONIA_HSCHED_BNODE_H

#include "hs_model.h"

void node_at(const struct bnode *b, double dt, struct bnode *o);
void nodes_sync(hs_sched_t *s);
int job_nodes(const hs_sched_t *s, const struct job *j, const int **list);
double buffers_sum_int(const hs_sched_t *s, const struct job *j);
double job_cap_buffers(const hs_sched_t *s, const struct job *j);
void bscratch_free(struct bscratch *b);
int bscratch_reserve(hs_sched_t *s, size_t n, size_t ns);
int place_phase(hs_sched_t *s, size_t i, struct job *j);
int bnode_set_place(const hs_sched_t *s, struct job *j, const int *nodes, int n);
void add_stripes(hs_sched_t *s, size_t i, const struct job *j);
/* One decision on a platform with buffers; 'decide_group' decides one group of
 * phases (hs_decide.c passes its group_decide(): the layer above, reached through
 * a callback). */
typedef int (*hs_group_decide_fn)(hs_sched_t *s, const hs_ctx_t *ctx, size_t g, double B,
                                  bool stripes);
int decide_buffers(hs_sched_t *s, const hs_ctx_t *ctx, size_t n, hs_group_decide_fn decide_group);

#endif /* HARMONIA_HSCHED_BNODE_H */
