/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * calibrate.h — 'bbmgr calibrate PATH': measure a storage device's bandwidth with
 * 1..N concurrent streams and derive its MSCA curve (doc/design.md §2), written as a
 * device profile for bbmgr.yaml or a bbsim workload (doc/calibration.md).
 */
#ifndef BBMGR_CALIBRATE_H
#define BBMGR_CALIBRATE_H

/* argv[0] is the first argument after "calibrate".  Returns the exit status. */
int cmd_calibrate(int argc, char **argv);

#endif /* BBMGR_CALIBRATE_H */
