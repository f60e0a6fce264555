/* SPDX-License-Identifier: GPL-3.0-or-later
 * verbs.c: the RDMA backend.  One RC queue pair per connection on the NIC whose subnet holds the
 * peer; the QP numbers, PSNs and GIDs travel over a TCP socket on that same subnet.  Messages are
 * RDMA SENDs into buffers the receiver posted (rnr_retry 7: a send waits for its receive); a
 * message longer than the posted buffer fails the receive (local length error), never overruns it.
 * A lost cable: a send fails by itself (the QP's retries run out: its completion names the port's state),
 * but a receive would wait for good, so while a request waits the port's state is read (at most every
 * WATCH_PERIOD_MS): not ACTIVE for NCCL_MESH_CABLE_TIMEOUT_MS without a completion ends the connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_ops.h"
#include "wire.h"

#if MESH_HAVE_VERBS
#define RING 64
#define INFO_BYTES 32
#define MAX_MSG ((size_t)1 << 31) - 1
#define WATCH_PERIOD_MS 200

struct mesh_verbs_mr {
  struct ibv_mr *mr;
};

struct mesh_verbs_request {
  struct mesh_verbs_comm *comm;
  int used, done, failed;
  size_t size;
};

struct mesh_verbs_comm {
  int is_send;
  const struct mesh_verbs_ops *ops;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct mesh_nic nic;
  int traffic_class;
  enum ibv_mtu mtu;
  uint32_t psn;
  uint16_t lid;
  int fd; /* the set-up socket, kept until close */
  uint64_t posted;
  struct mesh_route route;
  int timeout_ms; /* NCCL_MESH_CABLE_TIMEOUT_MS, 0: no watch */
  struct mesh_stall port_stall;
  int64_t next_watch_ms;
  int broken;
  char desc[MESH_ERRLEN];
  char error[MESH_ERRLEN];
  struct mesh_verbs_request reqs[RING];
};

enum { ST_SEND_INFO, ST_RECV_INFO, ST_READY };

struct mesh_verbs_conn {
  struct mesh_verbs_comm *c;
  int stage;
  uint8_t out[INFO_BYTES], in[INFO_BYTES];
  size_t sent, got;
};

static void comm_free(struct mesh_verbs_comm *c) {
  if (c == NULL) return;
  if (c->qp) c->ops->destroy_qp(c->qp);
  if (c->cq) c->ops->destroy_cq(c->cq);
  if (c->pd) c->ops->dealloc_pd(c->pd);
  if (c->ctx) c->ops->close_device(c->ctx);
  if (c->fd >= 0) close(c->fd);
  free(c);
}

struct mesh_verbs_conn *mesh_verbs_conn_start(int is_send, int fd, const struct mesh_nic *nic,
                                              const struct mesh_route *route, int traffic_class,
                                              int cable_timeout_ms, char *err, size_t errlen) {
  const struct mesh_verbs_ops *ops = mesh_verbs_ops_in_use();
  char nicname[MESH_STR * 2], gidname[MESH_STR * 2];
  snprintf(nicname, sizeof(nicname), "%s:%d", nic->dev, nic->port);
  snprintf(gidname, sizeof(gidname), "%d (%s)", nic->gid_index, nic->gid_text);
  struct mesh_verbs_conn *vc = calloc(1, sizeof(*vc));
  struct mesh_verbs_comm *c = calloc(1, sizeof(*c));
  if (vc == NULL || c == NULL || ops == NULL) {
    free(vc);
    free(c);
    snprintf(err, errlen, "%s", ops == NULL ? "verbs backend not initialised" : "out of memory");
    return NULL;
  }
  vc->c = c;
  c->is_send = is_send;
  c->ops = ops;
  c->nic = *nic;
  c->fd = fd;
  c->traffic_class = traffic_class;
  c->route = *route;
  c->timeout_ms = cable_timeout_ms;
  mesh_route_desc(route, nicname, gidname, c->desc, sizeof(c->desc));
  for (int i = 0; i < RING; i++) c->reqs[i].comm = c;
  const char *step = NULL;
  int n = 0;
  struct ibv_device **list = ops->get_device_list(&n);
  for (int i = 0; list != NULL && i < n; i++) {
    if (strcmp(ops->get_device_name(list[i]), nic->dev) == 0) c->ctx = ops->open_device(list[i]);
  }
  if (list) ops->free_device_list(list);
  struct ibv_port_attr pattr;
  memset(&pattr, 0, sizeof(pattr));
  if (c->ctx == NULL) {
    step = "opening the device";
  } else if (ops->query_port(c->ctx, (uint8_t)nic->port, &pattr) != 0) {
    step = "ibv_query_port";
  } else if (pattr.state != IBV_PORT_ACTIVE) {
    step = "checking the port (its state is not ACTIVE)";
  } else if ((c->pd = ops->alloc_pd(c->ctx)) == NULL) {
    step = "ibv_alloc_pd";
  } else if ((c->cq = ops->create_cq(c->ctx, 2 * RING, NULL, NULL, 0)) == NULL) {
    step = "ibv_create_cq";
  } else {
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = c->cq;
    ia.recv_cq = c->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = RING;
    ia.cap.max_recv_wr = RING;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    if ((c->qp = ops->create_qp(c->pd, &ia)) == NULL) {
      step = "ibv_create_qp";
    } else {
      struct ibv_qp_attr a;
      memset(&a, 0, sizeof(a));
      a.qp_state = IBV_QPS_INIT;
      a.pkey_index = 0;
      a.port_num = (uint8_t)nic->port;
      a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      if (ops->modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
        step = "ibv_modify_qp to INIT";
    }
  }
  if (step != NULL) {
    snprintf(err, errlen, "%s failed (%s)", step, c->desc);
    comm_free(c);
    free(vc);
    return NULL;
  }
  c->mtu = pattr.active_mtu;
  c->lid = pattr.lid;
  c->psn = (uint32_t)(mesh_random64() & 0xffffff);
  memcpy(vc->out, "MSHQ", 4);
  put32(vc->out + 4, c->qp->qp_num);
  put32(vc->out + 8, c->psn);
  vc->out[12] = (uint8_t)(c->lid >> 8);
  vc->out[13] = (uint8_t)c->lid;
  vc->out[14] = (uint8_t)c->mtu;
  vc->out[15] = (uint8_t)nic->port;
  memcpy(vc->out + 16, nic->gid, 16);
  vc->stage = is_send ? ST_SEND_INFO : ST_RECV_INFO;
  mesh_info("verbs %s: QP %u on %s", is_send ? "connect" : "accept", c->qp->qp_num, c->desc);
  return vc;
}

static int to_rtr_rts(struct mesh_verbs_comm *c, const uint8_t *in, char *err, size_t errlen) {
  if (memcmp(in, "MSHQ", 4) != 0) {
    snprintf(err, errlen, "the peer's QP data is corrupt (%s)", c->desc);
    return -1;
  }
  uint32_t rqpn = get32(in + 4), rpsn = get32(in + 8);
  uint16_t rlid = (uint16_t)((in[12] << 8) | in[13]);
  enum ibv_mtu rmtu = (enum ibv_mtu)in[14];
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = rmtu < c->mtu ? rmtu : c->mtu;
  a.dest_qp_num = rqpn;
  a.rq_psn = rpsn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  memcpy(a.ah_attr.grh.dgid.raw, in + 16, 16);
  a.ah_attr.grh.sgid_index = (uint8_t)c->nic.gid_index;
  a.ah_attr.grh.hop_limit = 255;
  a.ah_attr.grh.traffic_class = (uint8_t)(c->traffic_class >= 0 ? c->traffic_class : 0);
  a.ah_attr.dlid = rlid;
  a.ah_attr.port_num = (uint8_t)c->nic.port;
  if (c->ops->modify_qp(c->qp, &a,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
    char rgid[MESH_STR];
    uint32_t r4;
    if (mesh_gid_ipv4(in + 16, &r4) == 0) mesh_ipv4_str(r4, rgid, sizeof(rgid));
    else snprintf(rgid, sizeof(rgid), "non-IPv4");
    snprintf(err, errlen, "ibv_modify_qp to RTR failed (remote QP %u, remote GID ::ffff:%s; %s)", rqpn, rgid, c->desc);
    return -1;
  }
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = c->psn;
  a.max_rd_atomic = 1;
  if (c->ops->modify_qp(c->qp, &a,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                            IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    snprintf(err, errlen, "ibv_modify_qp to RTS failed (%s)", c->desc);
    return -1;
  }
  return 0;
}

int mesh_verbs_conn_progress(struct mesh_verbs_conn *vc, struct mesh_verbs_comm **comm, char *err, size_t errlen) {
  struct mesh_verbs_comm *c = vc->c;
  *comm = NULL;
  for (;;) {
    if (vc->stage == ST_SEND_INFO) {
      if (mesh_send_some(c->fd, vc->out, INFO_BYTES, &vc->sent) != 0) {
        snprintf(err, errlen, "sending QP data over TCP failed (%s)", c->desc);
        goto fail;
      }
      if (vc->sent < INFO_BYTES) return 0;
      vc->stage = c->is_send ? ST_RECV_INFO : ST_READY;
    } else if (vc->stage == ST_RECV_INFO) {
      int rc = mesh_recv_some(c->fd, vc->in, INFO_BYTES, &vc->got);
      if (rc != 0) {
        snprintf(err, errlen, "receiving the peer's QP data failed: %s (%s)", rc > 0 ? "connection closed" : "error",
                 c->desc);
        goto fail;
      }
      if (vc->got < INFO_BYTES) return 0;
      if (to_rtr_rts(c, vc->in, err, errlen) != 0) goto fail;
      /* The acceptor answers only once its QP can receive; the connector is done on the answer. */
      vc->stage = c->is_send ? ST_READY : ST_SEND_INFO;
    } else {
      *comm = c;
      free(vc);
      return 1;
    }
  }
fail:
  mesh_verbs_conn_abort(vc);
  return -1;
}

void mesh_verbs_conn_abort(struct mesh_verbs_conn *vc) {
  if (vc == NULL) return;
  comm_free(vc->c);
  free(vc);
}

int mesh_verbs_reg_mr(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr **mr, char *err,
                      size_t errlen) {
  struct mesh_verbs_mr *m = calloc(1, sizeof(*m));
  if (m == NULL) return -1;
  m->mr = c->ops->reg_mr(c->pd, data, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (m->mr == NULL) {
    snprintf(err, errlen, "ibv_reg_mr of %zu bytes failed (memlock limit?) (%s)", size, c->desc);
    free(m);
    return -1;
  }
  *mr = m;
  return 0;
}

int mesh_verbs_dereg_mr(struct mesh_verbs_comm *c, struct mesh_verbs_mr *mr) {
  int rc = mr && mr->mr ? c->ops->dereg_mr(mr->mr) : 0;
  free(mr);
  return rc;
}

int mesh_verbs_post(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr *mr,
                    struct mesh_verbs_request **req, char *err, size_t errlen) {
  *req = NULL;
  if (c->broken) {
    snprintf(err, errlen, "%s", c->error);
    return -1;
  }
  if (mr == NULL || size > MAX_MSG) {
    snprintf(err, errlen, "%s of %zu bytes %s (%s)", c->is_send ? "send" : "receive", size,
             mr == NULL ? "from an unregistered buffer" : "exceeds 2 GiB", c->desc);
    return -1;
  }
  int slot = (int)(c->posted % RING);
  struct mesh_verbs_request *r = &c->reqs[slot];
  if (r->used) return 0;
  struct ibv_sge sge = {.addr = (uintptr_t)data, .length = (uint32_t)size, .lkey = mr->mr->lkey};
  int rc;
  if (c->is_send) {
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t)slot;
    wr.sg_list = &sge;
    wr.num_sge = size ? 1 : 0;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    rc = c->ops->post_send(c->qp, &wr, &bad);
  } else {
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t)slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    rc = c->ops->post_recv(c->qp, &wr, &bad);
  }
  if (rc != 0) {
    snprintf(err, errlen, "ibv_post_%s of %zu bytes failed (%d) (%s)", c->is_send ? "send" : "recv", size, rc,
             c->desc);
    return -1;
  }
  r->used = 1;
  r->done = 0;
  r->failed = 0;
  r->size = size;
  c->posted++;
  *req = r;
  return 0;
}

static const char *wc_status_name(int s) {
  switch (s) {
    case IBV_WC_LOC_LEN_ERR: return "local length error (the peer sent more than the posted buffer holds)";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded (no answer from the peer's GID)";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "receiver-not-ready retries exceeded";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_WR_FLUSH_ERR: return "flushed (the QP is in error)";
    default: return "error";
  }
}

static const char *port_state_name(int s) {
  switch (s) {
    case IBV_PORT_NOP: return "NOP";
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "unknown";
  }
}

/* The port's state: IBV_PORT_ACTIVE, another state, or -1 when it cannot be read. */
static int port_state(struct mesh_verbs_comm *c) {
  struct ibv_port_attr a;
  memset(&a, 0, sizeof(a));
  return c->ops->query_port(c->ctx, (uint8_t)c->nic.port, &a) == 0 ? (int)a.state : -1;
}

/* "cable enp1 (192.168.100.1 -> 192.168.100.2) lost: RDMA port mlx5_0:1 is DOWN" */
static void port_lost(struct mesh_verbs_comm *c, int state, char *out, size_t len) {
  char cable[MESH_ERRLEN / 4];
  mesh_cable_name(&c->route, cable, sizeof(cable));
  snprintf(out, len, "%s lost: RDMA port %s:%d is %s", cable, c->nic.dev, c->nic.port, port_state_name(state));
}

/* A request waits and no completion came: is the port still ACTIVE? */
static void watch_port(struct mesh_verbs_comm *c, struct mesh_verbs_request *r) {
  int64_t now = mesh_now_ms();
  if (c->timeout_ms <= 0 || c->broken || now < c->next_watch_ms) return;
  c->next_watch_ms = now + WATCH_PERIOD_MS;
  int st = port_state(c);
  int bad = st >= 0 && st != IBV_PORT_ACTIVE;
  int64_t held = mesh_stall_update(&c->port_stall, bad, now);
  if (!bad || held < c->timeout_ms) return;
  char lost[MESH_ERRLEN / 2];
  port_lost(c, st, lost, sizeof(lost));
  snprintf(c->error, sizeof(c->error), "%s of %zu bytes: %s for %.1f s (%s)", c->is_send ? "send" : "receive",
           r->size, lost, (double)held / 1000, c->desc);
  c->broken = 1;
  r->failed = 1;
}

int mesh_verbs_test(struct mesh_verbs_request *r, int *done, size_t *size, char *err, size_t errlen) {
  struct mesh_verbs_comm *c = r->comm;
  *done = 0;
  if (!r->done && !r->failed) {
    struct ibv_wc wc[16];
    int n = c->ops->poll_cq(c->cq, 16, wc);
    if (n < 0) {
      snprintf(err, errlen, "ibv_poll_cq failed (%s)", c->desc);
      return -1;
    }
    if (n > 0) mesh_stall_update(&c->port_stall, 0, 0); /* completions: the port works */
    for (int i = 0; i < n; i++) {
      if (wc[i].wr_id >= RING) continue;
      struct mesh_verbs_request *q = &c->reqs[wc[i].wr_id];
      if (wc[i].status != IBV_WC_SUCCESS) {
        q->failed = 1;
        if (!c->broken) {
          /* a pulled cable shows as retries run out: say what the port is now */
          int st = port_state(c);
          char lost[MESH_ERRLEN / 2] = "";
          if (st >= 0 && st != IBV_PORT_ACTIVE) port_lost(c, st, lost, sizeof(lost));
          snprintf(c->error, sizeof(c->error), "%s of %zu bytes: work completion status %d, %s%s%s (%s)",
                   c->is_send ? "send" : "receive", q->size, (int)wc[i].status, wc_status_name((int)wc[i].status),
                   lost[0] ? "; " : "", lost, c->desc);
        }
        c->broken = 1;
      } else {
        q->done = 1;
        if (!c->is_send) q->size = wc[i].byte_len;
      }
    }
    if (!r->done && !r->failed) watch_port(c, r);
  }
  if (r->failed) {
    snprintf(err, errlen, "%s", c->error);
    return -1;
  }
  if (r->done) {
    *done = 1;
    *size = r->size;
    r->used = 0;
  }
  return 0;
}

void mesh_verbs_comm_destroy(struct mesh_verbs_comm *c) { comm_free(c); }

#else /* built without infiniband/verbs.h */
struct mesh_verbs_conn *mesh_verbs_conn_start(int is_send, int fd, const struct mesh_nic *nic,
                                              const struct mesh_route *route, int traffic_class,
                                              int cable_timeout_ms, char *err, size_t errlen) {
  (void)is_send, (void)fd, (void)nic, (void)route, (void)traffic_class, (void)cable_timeout_ms;
  snprintf(err, errlen, "this build has no verbs backend");
  return NULL;
}
int mesh_verbs_conn_progress(struct mesh_verbs_conn *vc, struct mesh_verbs_comm **comm, char *err, size_t errlen) {
  (void)vc, (void)comm;
  snprintf(err, errlen, "this build has no verbs backend");
  return -1;
}
void mesh_verbs_conn_abort(struct mesh_verbs_conn *vc) { (void)vc; }
int mesh_verbs_reg_mr(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr **mr, char *err,
                      size_t errlen) {
  (void)c, (void)data, (void)size, (void)mr;
  snprintf(err, errlen, "this build has no verbs backend");
  return -1;
}
int mesh_verbs_dereg_mr(struct mesh_verbs_comm *c, struct mesh_verbs_mr *mr) {
  (void)c, (void)mr;
  return -1;
}
int mesh_verbs_post(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr *mr,
                    struct mesh_verbs_request **req, char *err, size_t errlen) {
  (void)c, (void)data, (void)size, (void)mr, (void)req;
  snprintf(err, errlen, "this build has no verbs backend");
  return -1;
}
int mesh_verbs_test(struct mesh_verbs_request *r, int *done, size_t *size, char *err, size_t errlen) {
  (void)r, (void)done, (void)size;
  snprintf(err, errlen, "this build has no verbs backend");
  return -1;
}
void mesh_verbs_comm_destroy(struct mesh_verbs_comm *c) { (void)c; }
#endif
