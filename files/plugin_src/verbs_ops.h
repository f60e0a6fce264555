/* SPDX-License-Identifier: GPL-3.0-or-later
 * verbs_ops.h: the libibverbs calls the verbs backend makes, as a table.  verbs_ops.c fills it from
 * libibverbs.so.1 at run time (dlopen: the plugin loads and the TCP backend works on hosts without
 * it); tests fill it with a fake.
 */
#ifndef MESH_VERBS_OPS_H
#define MESH_VERBS_OPS_H

#include "mesh.h"

#if MESH_HAVE_VERBS
#include <infiniband/verbs.h>

struct mesh_verbs_ops {
  struct ibv_device **(*get_device_list)(int *num);
  void (*free_device_list)(struct ibv_device **list);
  const char *(*get_device_name)(struct ibv_device *dev);
  struct ibv_context *(*open_device)(struct ibv_device *dev);
  int (*close_device)(struct ibv_context *ctx);
  int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
  struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
  int (*dealloc_pd)(struct ibv_pd *pd);
  struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
  int (*dereg_mr)(struct ibv_mr *mr);
  struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *channel,
                              int comp_vector);
  int (*destroy_cq)(struct ibv_cq *cq);
  struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
  int (*destroy_qp)(struct ibv_qp *qp);
  int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
  int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
  int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
  int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
};
#endif

#endif
