/* SPDX-License-Identifier: GPL-3.0-or-later
 * verbs_ops.c: the real libibverbs, opened with dlopen on first use.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "verbs_ops.h"

static const struct mesh_verbs_ops *g_ops; /* what the backend uses; tests replace it */

void mesh_verbs_use_ops(const struct mesh_verbs_ops *ops) { g_ops = ops; }
const struct mesh_verbs_ops *mesh_verbs_ops_in_use(void) { return g_ops; }

#if MESH_HAVE_VERBS
static struct mesh_verbs_ops g_real;
static char g_real_err[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ibv_post_send, ibv_post_recv and ibv_poll_cq are inline in verbs.h: they call the provider
 * through the context, so they need no symbol from the library. */
static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  return qp->context->ops.post_send(qp, wr, bad);
}
static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  return qp->context->ops.post_recv(qp, wr, bad);
}
static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) { return cq->context->ops.poll_cq(cq, n, wc); }

#define LOAD(field, symbol)                                                   \
  do {                                                                        \
    *(void **)(&g_real.field) = dlsym(lib, symbol);                           \
    if (g_real.field == NULL) {                                               \
      snprintf(g_real_err, sizeof(g_real_err), "libibverbs lacks %s", symbol); \
      return;                                                                 \
    }                                                                         \
  } while (0)

static void load_real(void) {
  void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    snprintf(g_real_err, sizeof(g_real_err), "cannot load libibverbs.so.1: %s", dlerror());
    return;
  }
  LOAD(get_device_list, "ibv_get_device_list");
  LOAD(free_device_list, "ibv_free_device_list");
  LOAD(get_device_name, "ibv_get_device_name");
  LOAD(open_device, "ibv_open_device");
  LOAD(close_device, "ibv_close_device");
  LOAD(query_port, "ibv_query_port");
  LOAD(alloc_pd, "ibv_alloc_pd");
  LOAD(dealloc_pd, "ibv_dealloc_pd");
  LOAD(reg_mr, "ibv_reg_mr");
  LOAD(dereg_mr, "ibv_dereg_mr");
  LOAD(create_cq, "ibv_create_cq");
  LOAD(destroy_cq, "ibv_destroy_cq");
  LOAD(create_qp, "ibv_create_qp");
  LOAD(destroy_qp, "ibv_destroy_qp");
  LOAD(modify_qp, "ibv_modify_qp");
  g_real.post_send = real_post_send;
  g_real.post_recv = real_post_recv;
  g_real.poll_cq = real_poll_cq;
  g_real_err[0] = '\0';
}

const struct mesh_verbs_ops *mesh_verbs_real_ops(char *err, size_t errlen) {
  pthread_once(&g_once, load_real);
  if (g_real_err[0] != '\0') {
    snprintf(err, errlen, "%s", g_real_err);
    return NULL;
  }
  return &g_real;
}
#else
const struct mesh_verbs_ops *mesh_verbs_real_ops(char *err, size_t errlen) {
  snprintf(err, errlen, "this build has no verbs backend (infiniband/verbs.h was missing when it was compiled)");
  return NULL;
}
#endif
