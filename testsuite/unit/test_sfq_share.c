/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_sfq_share.c — the real-device share check of bench/sfq_share.c, compiled into
 * testsuite/unit so that test_sfq_device.sh has it at 'make check' time (testsuite/
 * is built before bench/).  The program is the same source.
 */
#include "../../bench/sfq_share.c"
