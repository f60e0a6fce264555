/* SPDX-License-Identifier: GPL-3.0-or-later
 * check.h: the tests' one assertion: counts checks and failures, prints each failure with its place and
 * condition, and carries on (a test binary reports every failed check, not only the first).  The counters
 * live in check.c. */
#ifndef MESH_TEST_CHECK_H
#define MESH_TEST_CHECK_H

#include <stdio.h>

extern int checks, failures;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    checks++;                                                         \
    if (!(cond)) {                                                    \
      failures++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)

#endif
