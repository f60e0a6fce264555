/* SPDX-License-Identifier: GPL-3.0-or-later
 * check.c: the counters of check.h. */
#include "check.h"

int checks, failures;
