/* SPDX-License-Identifier: GPL-3.0-or-later
 * fake_verbs.h: an in-process stand-in for libibverbs.  Queue pairs of one process are wired to each
 * other by QP number: a SEND lands in the receive the peer QP posted (or waits for it), with the
 * length check and the completions a real RC QP gives.
 */
#ifndef FAKE_VERBS_H
#define FAKE_VERBS_H
#include "verbs_ops.h"

enum fake_fail { FAKE_OK = 0, FAKE_FAIL_OPEN, FAKE_FAIL_QP, FAKE_FAIL_RTR, FAKE_FAIL_REG_MR, FAKE_PORT_DOWN };

struct fake_record {
  int rtr_calls;
  int last_sgid_index;
  uint8_t last_dgid[16];
  int last_traffic_class;
  int qps_alive, cqs_alive, pds_alive, ctxs_alive, mrs_alive;
};

extern const struct mesh_verbs_ops fake_verbs_ops;
extern struct fake_record fake_rec;
/* Devices named in the comma-separated list; fail selects an injected failure. */
void fake_verbs_reset(const char *devices, enum fake_fail fail);
/* The cable of every port: down, ports read DOWN, nothing crosses, and a send completes with
 * IBV_WC_RETRY_EXC_ERR as a real RC QP's does once its retries run out; a receive just waits. */
void fake_verbs_link(int up);
#endif
