/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <stdlib.h>
int main(void) { return EXIT_SUCCESS; }
