/* SPDX-License-Identifier: GPL-3.0-or-later
 * tcp.c: the TCP data path.  A connection has nsocks sockets, each served by one thread; a message
 * is cut into at most nsocks contiguous slices (only the last may be under MESH_TCP_MIN_SLICE) and each
 * socket carries a 16-byte header ("MSHD", tag, size) and then its slice.  Requests complete in the
 * order they were posted, as NCCL expects of one comm.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mesh.h"
#include "wire.h"

#define HDR_BYTES 16

struct mesh_tcp_request {
  struct mesh_tcp_comm *comm;
  int used; /* touched by the posting thread only */
  void *data;
  size_t size; /* send: bytes to send; receive: room in the buffer */
  int tag;
  atomic_int remaining;
  atomic_size_t got;
  atomic_int failed;
};

struct worker {
  struct mesh_tcp_comm *comm;
  int j;
};

struct mesh_tcp_comm {
  int is_send;
  int nsocks;
  int fds[MESH_MAX_SOCKS];
  pthread_t threads[MESH_MAX_SOCKS];
  struct worker workers[MESH_MAX_SOCKS];
  int nthreads;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t head; /* requests posted; under mu */
  int closing;   /* under mu */
  atomic_int broken;
  char error[MESH_ERRLEN]; /* first failure; written once under mu before broken is set */
  char desc[MESH_ERRLEN];
  struct mesh_tcp_request reqs[MESH_TCP_RING];
};

void mesh_tcp_slice(size_t size, int nsocks, int j, size_t *offset, size_t *len) {
  *offset = 0;
  *len = 0;
  if (size == 0 || nsocks < 1) return;
  size_t nslices = size / MESH_TCP_MIN_SLICE; /* every slice but the last holds >= MESH_TCP_MIN_SLICE */
  if (nslices < 1) nslices = 1;
  if (nslices > (size_t)nsocks) nslices = (size_t)nsocks;
  if ((size_t)j >= nslices) return;
  size_t per = (size + nslices - 1) / nslices;
  size_t off = per * (size_t)j;
  if (off >= size) return;
  *offset = off;
  *len = size - off < per ? size - off : per;
}

static int send_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int recv_all(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      errno = ECONNRESET;
      return -1;
    }
    if (n < 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static void fail(struct mesh_tcp_comm *c, struct mesh_tcp_request *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct mesh_tcp_comm *c, struct mesh_tcp_request *r, const char *fmt, ...) {
  char what[MESH_ERRLEN / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&c->mu);
  int quiet = c->closing;
  if (atomic_load(&c->broken)) {
    quiet = 1; /* another socket of the comm said it already */
  } else {
    snprintf(c->error, sizeof(c->error), "%s: %s (%s)", c->is_send ? "send" : "receive", what, c->desc);
    atomic_store(&c->broken, 1);
  }
  pthread_mutex_unlock(&c->mu);
  if (r != NULL) {
    atomic_store(&r->failed, 1);
    atomic_fetch_sub(&r->remaining, 1);
  }
  if (!quiet) mesh_warn("%s", c->error);
}


static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct mesh_tcp_comm *c = w->comm;
  int fd = c->fds[w->j];
  for (uint64_t seq = 0;; seq++) {
    pthread_mutex_lock(&c->mu);
    while (!c->closing && c->head <= seq) pthread_cond_wait(&c->cv, &c->mu);
    int stop = c->head <= seq;
    pthread_mutex_unlock(&c->mu);
    if (stop) return NULL;
    struct mesh_tcp_request *r = &c->reqs[seq % MESH_TCP_RING];
    uint8_t hdr[HDR_BYTES];
    size_t off, len;
    if (c->is_send) {
      memcpy(hdr, "MSHD", 4);
      put32(hdr + 4, (uint32_t)r->tag);
      put32(hdr + 8, (uint32_t)((uint64_t)r->size >> 32));
      put32(hdr + 12, (uint32_t)r->size);
      mesh_tcp_slice(r->size, c->nsocks, w->j, &off, &len);
      if (send_all(fd, hdr, HDR_BYTES) != 0 || send_all(fd, (char *)r->data + off, len) != 0) {
        fail(c, r, "socket %d of %d: %s after posting %zu bytes", w->j, c->nsocks, strerror(errno), r->size);
        return NULL;
      }
    } else {
      if (recv_all(fd, hdr, HDR_BYTES) != 0) {
        fail(c, r, "socket %d of %d: %s while waiting for a message", w->j, c->nsocks, strerror(errno));
        return NULL;
      }
      size_t size = ((size_t)get32(hdr + 8) << 32) | get32(hdr + 12);
      if (memcmp(hdr, "MSHD", 4) != 0) {
        fail(c, r, "socket %d of %d: corrupt message header", w->j, c->nsocks);
        return NULL;
      }
      if (size > r->size) {
        fail(c, r, "the peer sent %zu bytes but the posted buffer holds %zu", size, r->size);
        return NULL;
      }
      mesh_tcp_slice(size, c->nsocks, w->j, &off, &len);
      if (recv_all(fd, (char *)r->data + off, len) != 0) {
        fail(c, r, "socket %d of %d: %s in a message of %zu bytes", w->j, c->nsocks, strerror(errno), size);
        return NULL;
      }
      atomic_store(&r->got, size);
    }
    atomic_fetch_sub(&r->remaining, 1);
  }
}

struct mesh_tcp_comm *mesh_tcp_comm_create(int is_send, const int *fds, int nsocks, const char *desc, char *err,
                                           size_t errlen) {
  struct mesh_tcp_comm *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    snprintf(err, errlen, "out of memory (%s)", desc);
    return NULL;
  }
  c->is_send = is_send;
  c->nsocks = nsocks;
  snprintf(c->desc, sizeof(c->desc), "%s", desc);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  for (int i = 0; i < MESH_TCP_RING; i++) c->reqs[i].comm = c;
  for (int j = 0; j < nsocks; j++) {
    c->fds[j] = fds[j];
    mesh_set_blocking(fds[j], 1);
  }
  for (int j = 0; j < nsocks; j++) {
    c->workers[j].comm = c;
    c->workers[j].j = j;
    if (pthread_create(&c->threads[j], NULL, worker_main, &c->workers[j]) != 0) {
      snprintf(err, errlen, "cannot start socket thread %d (%s)", j, desc);
      mesh_tcp_comm_destroy(c);
      return NULL;
    }
    c->nthreads++;
  }
  return c;
}

int mesh_tcp_post(struct mesh_tcp_comm *c, void *data, size_t size, int tag, struct mesh_tcp_request **req) {
  *req = NULL;
  if (atomic_load(&c->broken)) return -1;
  struct mesh_tcp_request *r = &c->reqs[c->head % MESH_TCP_RING]; /* head only moves on this thread */
  if (r->used) return 0;
  r->used = 1;
  r->data = data;
  r->size = size;
  r->tag = tag;
  atomic_store(&r->got, 0);
  atomic_store(&r->failed, 0);
  atomic_store(&r->remaining, c->nsocks);
  pthread_mutex_lock(&c->mu);
  c->head++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  *req = r;
  return 0;
}

int mesh_tcp_test(struct mesh_tcp_request *r, int *done, size_t *size, char *err, size_t errlen) {
  struct mesh_tcp_comm *c = r->comm;
  *done = 0;
  if (atomic_load(&r->remaining) == 0 && !atomic_load(&r->failed)) {
    *done = 1;
    *size = c->is_send ? r->size : atomic_load(&r->got);
    r->used = 0;
    return 0;
  }
  if (atomic_load(&r->failed) || atomic_load(&c->broken)) {
    pthread_mutex_lock(&c->mu);
    snprintf(err, errlen, "%s", c->error);
    pthread_mutex_unlock(&c->mu);
    return -1;
  }
  return 0;
}

void mesh_tcp_comm_destroy(struct mesh_tcp_comm *c) {
  if (c == NULL) return;
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  /* A receiving thread may sit in recv(): shutting the socket down wakes it. */
  for (int j = 0; j < c->nsocks; j++) shutdown(c->fds[j], SHUT_RDWR);
  for (int j = 0; j < c->nthreads; j++) pthread_join(c->threads[j], NULL);
  for (int j = 0; j < c->nsocks; j++) close(c->fds[j]);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}
