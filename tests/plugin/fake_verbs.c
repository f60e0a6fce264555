/* SPDX-License-Identifier: GPL-3.0-or-later
 * fake_verbs.c: see fake_verbs.h.  Single-threaded, like the plugin's use of verbs.
 */
#include "fake_verbs.h"

#include <stdlib.h>
#include <string.h>

#define MAXDEV 8
#define MAXQP 64
#define QDEPTH 256

struct fake_cq {
  struct ibv_cq cq; /* first: the plugin sees a struct ibv_cq */
  struct ibv_wc wc[QDEPTH];
  int head, tail;
};

struct pending_send {
  uint64_t wr_id;
  void *addr;
  uint32_t len;
};
struct posted_recv {
  uint64_t wr_id;
  void *addr;
  uint32_t len;
};

struct fake_qp {
  struct ibv_qp qp;
  int used;
  uint32_t dest;
  struct pending_send sends[QDEPTH];
  int ns;
  struct posted_recv recvs[QDEPTH];
  int nr;
};

struct fake_record fake_rec;
static struct ibv_device g_devs[MAXDEV];
static struct ibv_device *g_list[MAXDEV + 1];
static int g_ndev;
static enum fake_fail g_fail;
static int g_link_down;
static struct fake_qp g_qps[MAXQP];
static uint32_t g_next_qpn = 100;

void fake_verbs_reset(const char *devices, enum fake_fail fail) {
  memset(&fake_rec, 0, sizeof(fake_rec));
  memset(g_devs, 0, sizeof(g_devs));
  memset(g_qps, 0, sizeof(g_qps));
  g_ndev = 0;
  g_fail = fail;
  g_link_down = 0;
  const char *p = devices;
  while (p && *p && g_ndev < MAXDEV) {
    const char *c = strchr(p, ',');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    memcpy(g_devs[g_ndev].name, p, n < IBV_SYSFS_NAME_MAX - 1 ? n : IBV_SYSFS_NAME_MAX - 1);
    g_list[g_ndev] = &g_devs[g_ndev];
    g_ndev++;
    p = c ? c + 1 : NULL;
  }
  g_list[g_ndev] = NULL;
}

static struct ibv_device **f_get_device_list(int *num) {
  *num = g_ndev;
  return g_list;
}
static void f_free_device_list(struct ibv_device **list) { (void)list; }
static const char *f_get_device_name(struct ibv_device *dev) { return dev->name; }
static struct ibv_context *f_open_device(struct ibv_device *dev) {
  if (g_fail == FAKE_FAIL_OPEN) return NULL;
  struct ibv_context *c = calloc(1, sizeof(*c));
  c->device = dev;
  fake_rec.ctxs_alive++;
  return c;
}
static int f_close_device(struct ibv_context *ctx) {
  free(ctx);
  fake_rec.ctxs_alive--;
  return 0;
}
static int f_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr) {
  (void)ctx, (void)port;
  memset(attr, 0, sizeof(*attr));
  attr->state = g_fail == FAKE_PORT_DOWN || g_link_down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  attr->active_mtu = IBV_MTU_1024;
  attr->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}
static struct ibv_pd *f_alloc_pd(struct ibv_context *ctx) {
  struct ibv_pd *pd = calloc(1, sizeof(*pd));
  pd->context = ctx;
  fake_rec.pds_alive++;
  return pd;
}
static int f_dealloc_pd(struct ibv_pd *pd) {
  free(pd);
  fake_rec.pds_alive--;
  return 0;
}
static struct ibv_mr *f_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
  (void)access;
  if (g_fail == FAKE_FAIL_REG_MR) return NULL;
  struct ibv_mr *mr = calloc(1, sizeof(*mr));
  mr->pd = pd;
  mr->addr = addr;
  mr->length = len;
  mr->lkey = 0x1234;
  fake_rec.mrs_alive++;
  return mr;
}
static int f_dereg_mr(struct ibv_mr *mr) {
  free(mr);
  fake_rec.mrs_alive--;
  return 0;
}
static struct ibv_cq *f_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
                                  int vec) {
  (void)cqe, (void)cq_context, (void)ch, (void)vec;
  struct fake_cq *cq = calloc(1, sizeof(*cq));
  cq->cq.context = ctx;
  fake_rec.cqs_alive++;
  return &cq->cq;
}
static int f_destroy_cq(struct ibv_cq *cq) {
  free(cq);
  fake_rec.cqs_alive--;
  return 0;
}
static struct ibv_qp *f_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
  if (g_fail == FAKE_FAIL_QP) return NULL;
  for (int i = 0; i < MAXQP; i++) {
    if (g_qps[i].used) continue;
    struct fake_qp *q = &g_qps[i];
    memset(q, 0, sizeof(*q));
    q->used = 1;
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.qp_num = g_next_qpn++;
    q->qp.qp_type = attr->qp_type;
    q->qp.state = IBV_QPS_RESET;
    fake_rec.qps_alive++;
    return &q->qp;
  }
  return NULL;
}
static int f_destroy_qp(struct ibv_qp *qp) {
  ((struct fake_qp *)qp)->used = 0;
  fake_rec.qps_alive--;
  return 0;
}
static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
  struct fake_qp *q = (struct fake_qp *)qp;
  if (!(mask & IBV_QP_STATE)) return 22;
  if (a->qp_state == IBV_QPS_RTR) {
    fake_rec.rtr_calls++;
    if (g_fail == FAKE_FAIL_RTR) return 110; /* ETIMEDOUT, as a wrong GID gives on real NICs */
    if (!(mask & IBV_QP_AV) || !a->ah_attr.is_global) return 22;
    q->dest = a->dest_qp_num;
    fake_rec.last_sgid_index = a->ah_attr.grh.sgid_index;
    fake_rec.last_traffic_class = a->ah_attr.grh.traffic_class;
    memcpy(fake_rec.last_dgid, a->ah_attr.grh.dgid.raw, 16);
  }
  qp->state = a->qp_state;
  return 0;
}

static struct fake_qp *by_num(uint32_t n) {
  for (int i = 0; i < MAXQP; i++)
    if (g_qps[i].used && g_qps[i].qp.qp_num == n) return &g_qps[i];
  return NULL;
}

static void complete(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len) {
  struct fake_cq *f = (struct fake_cq *)cq;
  struct ibv_wc *wc = &f->wc[f->tail++ % QDEPTH];
  memset(wc, 0, sizeof(*wc));
  wc->wr_id = wr_id;
  wc->status = st;
  wc->opcode = op;
  wc->byte_len = len;
}

void fake_verbs_link(int up) { g_link_down = !up; }

/* Delivers the oldest waiting send of `src` into the oldest receive of `dst`. */
static void deliver(struct fake_qp *src, struct fake_qp *dst) {
  while (!g_link_down && src->ns > 0 && dst->nr > 0) {
    struct pending_send s = src->sends[0];
    struct posted_recv r = dst->recvs[0];
    memmove(src->sends, src->sends + 1, sizeof(s) * (size_t)--src->ns);
    memmove(dst->recvs, dst->recvs + 1, sizeof(r) * (size_t)--dst->nr);
    if (s.len > r.len) {
      complete(dst->qp.recv_cq, r.wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0);
      complete(src->qp.send_cq, s.wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, 0);
      continue;
    }
    if (s.len) memcpy(r.addr, s.addr, s.len);
    complete(dst->qp.recv_cq, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, s.len);
    complete(src->qp.send_cq, s.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, s.len);
  }
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  struct fake_qp *q = (struct fake_qp *)qp;
  if (qp->state != IBV_QPS_RTS || q->ns == QDEPTH) {
    *bad = wr;
    return 22;
  }
  if (g_link_down) { /* the retries (timeout 14, retry_cnt 7: about half a second) run out at once */
    complete(qp->send_cq, wr->wr_id, IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0);
    return 0;
  }
  struct pending_send s = {wr->wr_id, wr->num_sge ? (void *)(uintptr_t)wr->sg_list[0].addr : NULL,
                           wr->num_sge ? wr->sg_list[0].length : 0};
  q->sends[q->ns++] = s;
  struct fake_qp *d = by_num(q->dest);
  if (d) deliver(q, d);
  return 0;
}
static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  struct fake_qp *q = (struct fake_qp *)qp;
  if (q->nr == QDEPTH) {
    *bad = wr;
    return 12;
  }
  struct posted_recv r = {wr->wr_id, (void *)(uintptr_t)wr->sg_list[0].addr, wr->sg_list[0].length};
  q->recvs[q->nr++] = r;
  for (int i = 0; i < MAXQP; i++)
    if (g_qps[i].used && g_qps[i].dest == qp->qp_num) deliver(&g_qps[i], q);
  return 0;
}
static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
  struct fake_cq *f = (struct fake_cq *)cq;
  int k = 0;
  while (k < n && f->head < f->tail) wc[k++] = f->wc[f->head++ % QDEPTH];
  return k;
}

const struct mesh_verbs_ops fake_verbs_ops = {
    .get_device_list = f_get_device_list, .free_device_list = f_free_device_list,
    .get_device_name = f_get_device_name, .open_device = f_open_device, .close_device = f_close_device,
    .query_port = f_query_port, .alloc_pd = f_alloc_pd, .dealloc_pd = f_dealloc_pd, .reg_mr = f_reg_mr,
    .dereg_mr = f_dereg_mr, .create_cq = f_create_cq, .destroy_cq = f_destroy_cq, .create_qp = f_create_qp,
    .destroy_qp = f_destroy_qp, .modify_qp = f_modify_qp, .post_send = f_post_send, .post_recv = f_post_recv,
    .poll_cq = f_poll_cq,
};
