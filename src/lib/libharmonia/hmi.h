/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hmi.h — what harmonia.c gives the interposer (preload.c) beyond the public API
 * (internal: not exported from libharmonia).
 */
#ifndef HARMONIA_HMI_H
#define HARMONIA_HMI_H

#include "harmonia/harmonia.h"

double hmi_rate(harmonia_t *h, double moved);
int hmi_hints(harmonia_t *h, double *w_iter, double *volume);

#endif /* HARMONIA_HMI_H */
