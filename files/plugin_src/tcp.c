/* SPDX-License-Identifier: GPL-3.0-or-later
 * tcp.c: the TCP data path.  A connection has nsocks sockets, each served by one thread with blocking I/O.
 * A message is cut into at most nsocks contiguous slices (only the last may be under MESH_TCP_MIN_SLICE);
 * the slices go to consecutive sockets starting where the previous message stopped, so small messages
 * rotate over the sockets (and over the cables, when the sockets span several) instead of queueing on one.
 * Each slice travels as one sendmsg: a 40-byte header that describes it (message number, message size,
 * offset, length, tag) and its bytes.  Sockets without a slice of a message carry nothing for it, and a
 * receiving thread places every slice by its header alone, so the sockets never wait for one another.
 * Requests complete in the order they were posted, as NCCL expects of one comm.
 * A lost cable (cable.c) ends the comm with an error naming it: while a request waits and the comm has made no
 * progress since the last look (at most every WATCH_PERIOD_MS, from test), each socket's cable is watched;
 * keepalive, tuned to the same bound, ends a socket whose peer answers nothing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mesh.h"
#include "wire.h"

#define HDR_BYTES 40
#define HDR_MAGIC "MSHD"
#define WATCH_PERIOD_MS 200

struct mesh_tcp_request {
  struct mesh_tcp_comm *comm;
  int used; /* touched by the posting thread only */
  uint64_t seq;
  void *data;
  size_t size; /* send: bytes to send; receive: room in the buffer */
  int tag;
  atomic_int remaining;    /* send: slices not yet handed to the kernel */
  atomic_int arrived;      /* receive: slices placed */
  atomic_size_t msg_size;  /* receive: the message's size, from its headers (stored before arrived moves) */
  atomic_int failed;
};

/* A slice for a sending socket: at most one per request and socket, so MESH_TCP_RING entries suffice. */
struct task {
  struct mesh_tcp_request *r;
  size_t off, len;
};

/* A sending socket's queue: one producer (the posting thread), one consumer (the socket's thread), no lock
 * on the way; the mutex and condition only put an idle thread to sleep and wake it. */
struct worker {
  struct mesh_tcp_comm *comm;
  int j;
  int fd;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t qhead;         /* the consumer's */
  _Atomic uint64_t qtail; /* the producer's */
  atomic_int waiting;     /* the consumer is (about to be) asleep: the producer signals */
  struct task q[MESH_TCP_RING];
};

struct mesh_tcp_comm {
  int is_send;
  int nsocks;
  int nthreads;
  struct worker w[MESH_MAX_SOCKS];
  uint64_t head;  /* requests posted; the posting thread only */
  int next_sock;  /* send: the socket of the next message's first slice; the posting thread only */
  pthread_mutex_t mu; /* receive: wakes threads holding a header for a request not posted yet */
  pthread_cond_t cv;
  _Atomic uint64_t posted; /* receive: requests posted (their fields written before it moves) */
  atomic_int nwaiting;
  atomic_int closing;
  atomic_int broken;
  char error[MESH_ERRLEN]; /* first failure; written once under mu before broken is set */
  char desc[MESH_ERRLEN];
  struct mesh_route routes[MESH_MAX_SOCKS]; /* socket j's */
  int timeout_ms;                           /* NCCL_MESH_CABLE_TIMEOUT_MS, 0: no watch */
  char sysfs_root[256];
  _Atomic uint64_t progress; /* slices handed to the kernel or placed: the comm moves */
  atomic_int watching;       /* one caller of test watches at a time; the fields below are its */
  uint64_t watched_progress;
  int64_t next_watch_ms;
  struct mesh_sock_watch watch[MESH_MAX_SOCKS];
  struct mesh_tcp_request reqs[MESH_TCP_RING];
};

int mesh_tcp_nslices(size_t size, int nsocks) {
  if (nsocks < 1) return 0;
  size_t n = size / MESH_TCP_MIN_SLICE; /* every slice but the last holds >= MESH_TCP_MIN_SLICE */
  if (n < 1) n = 1;
  if (n > (size_t)nsocks) n = (size_t)nsocks;
  return (int)n;
}

void mesh_tcp_slice(size_t size, int nsocks, int j, size_t *offset, size_t *len) {
  *offset = 0;
  *len = 0;
  if (size == 0 || nsocks < 1) return;
  size_t nslices = (size_t)mesh_tcp_nslices(size, nsocks);
  if ((size_t)j >= nslices) return;
  size_t per = (size + nslices - 1) / nslices;
  size_t off = per * (size_t)j;
  if (off >= size) return;
  *offset = off;
  *len = size - off < per ? size - off : per;
}

/* The header and the slice in one call: one syscall, and the header never leaves as a packet of its own. */
static int send_slice(int fd, uint8_t *hdr, const char *data, size_t len) {
  struct iovec iov[2] = {{hdr, HDR_BYTES}, {(void *)data, len}};
  struct msghdr m;
  memset(&m, 0, sizeof(m));
  m.msg_iov = iov;
  m.msg_iovlen = len ? 2 : 1;
  size_t left = HDR_BYTES + len;
  while (left > 0) {
    ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    left -= (size_t)n;
    while (n > 0) { /* step over what went out */
      if ((size_t)n >= m.msg_iov[0].iov_len) {
        n -= (ssize_t)m.msg_iov[0].iov_len;
        m.msg_iov++;
        m.msg_iovlen--;
      } else {
        m.msg_iov[0].iov_base = (char *)m.msg_iov[0].iov_base + n;
        m.msg_iov[0].iov_len -= (size_t)n;
        n = 0;
      }
    }
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

/* Records the comm's first failure; the request's test reports it.  quiet: no warning now (a peer that
 * closed between messages is only an error for a request that still waits, and its test says so). */
static void fail(struct mesh_tcp_comm *c, struct mesh_tcp_request *r, int quiet, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct mesh_tcp_comm *c, struct mesh_tcp_request *r, int quiet, const char *fmt, ...) {
  char what[MESH_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&c->mu);
  quiet |= atomic_load(&c->closing);
  if (atomic_load(&c->broken)) {
    quiet = 1; /* another socket of the comm said it already */
  } else {
    snprintf(c->error, sizeof(c->error), "%s: %s (%s)", c->is_send ? "send" : "receive", what, c->desc);
    atomic_store(&c->broken, 1);
  }
  pthread_mutex_unlock(&c->mu);
  if (r != NULL) atomic_store(&r->failed, 1);
  if (!quiet) mesh_warn("%s", c->error);
}

/* A socket's error, with its cable: a keepalive that timed out is a lost cable. */
static void sock_error(const struct mesh_tcp_comm *c, int j, int e, char *out, size_t len) {
  char cable[MESH_ERRLEN / 4];
  mesh_cable_name(&c->routes[j], cable, sizeof(cable));
  if (e == ETIMEDOUT && c->timeout_ms > 0) {
    int idle, intvl, cnt;
    mesh_keepalive_plan(c->timeout_ms, &idle, &intvl, &cnt);
    snprintf(out, len, "%s lost: the peer answered no TCP keepalive for %d s (%s), socket %d of %d", cable,
             idle + cnt * intvl, strerror(e), j, c->nsocks);
  } else
    snprintf(out, len, "socket %d of %d on %s: %s", j, c->nsocks, cable,
             e ? strerror(e) : "the peer closed the connection");
}

static void *send_main(struct worker *w) {
  struct mesh_tcp_comm *c = w->comm;
  for (;;) {
    if (w->qhead == atomic_load(&w->qtail)) {
      /* waiting goes up before the queue is looked at again, and the producer moves qtail before it looks
       * at waiting: one of the two sees the other, so no task is left asleep */
      pthread_mutex_lock(&w->mu);
      atomic_store(&w->waiting, 1);
      while (!atomic_load(&c->closing) && w->qhead == atomic_load(&w->qtail)) pthread_cond_wait(&w->cv, &w->mu);
      atomic_store(&w->waiting, 0);
      pthread_mutex_unlock(&w->mu);
      if (w->qhead == atomic_load(&w->qtail)) return NULL; /* closing */
    }
    struct task t = w->q[w->qhead % MESH_TCP_RING];
    w->qhead++;
    struct mesh_tcp_request *r = t.r;
    uint8_t hdr[HDR_BYTES];
    memcpy(hdr, HDR_MAGIC, 4);
    put32(hdr + 4, (uint32_t)r->tag);
    put64(hdr + 8, r->seq);
    put64(hdr + 16, (uint64_t)r->size);
    put64(hdr + 24, (uint64_t)t.off);
    put64(hdr + 32, (uint64_t)t.len);
    if (send_slice(w->fd, hdr, (const char *)r->data + t.off, t.len) != 0) {
      char why[MESH_ERRLEN / 2];
      sock_error(c, w->j, errno, why, sizeof(why));
      fail(c, r, 0, "%s, after posting %zu bytes", why, r->size);
      return NULL;
    }
    atomic_fetch_add(&c->progress, 1);
    atomic_fetch_sub(&r->remaining, 1);
  }
}

static void *recv_main(struct worker *w) {
  struct mesh_tcp_comm *c = w->comm;
  for (;;) {
    uint8_t hdr[HDR_BYTES];
    size_t got = 0;
    while (got < HDR_BYTES) {
      ssize_t n = recv(w->fd, hdr + got, HDR_BYTES - got, MSG_WAITALL);
      if (n > 0) {
        got += (size_t)n;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      int closed = n == 0 || errno == ECONNRESET;
      if (!atomic_load(&c->closing)) {
        char why[MESH_ERRLEN / 2];
        sock_error(c, w->j, closed ? 0 : errno, why, sizeof(why));
        fail(c, NULL, closed && got == 0, "%s, while waiting for a message", why);
      }
      return NULL;
    }
    uint64_t seq = get64(hdr + 8), size = get64(hdr + 16), off = get64(hdr + 24), len = get64(hdr + 32);
    if (memcmp(hdr, HDR_MAGIC, 4) != 0 || off > size || len > size - off) {
      fail(c, NULL, 0, "socket %d of %d: corrupt message header", w->j, c->nsocks);
      return NULL;
    }
    /* The slice may belong to a request not posted yet: wait for it (TCP holds the rest back meanwhile). */
    if (atomic_load(&c->posted) <= seq) {
      pthread_mutex_lock(&c->mu);
      atomic_fetch_add(&c->nwaiting, 1);
      while (!atomic_load(&c->closing) && atomic_load(&c->posted) <= seq) pthread_cond_wait(&c->cv, &c->mu);
      atomic_fetch_sub(&c->nwaiting, 1);
      pthread_mutex_unlock(&c->mu);
      if (atomic_load(&c->closing)) return NULL;
    }
    struct mesh_tcp_request *r = &c->reqs[seq % MESH_TCP_RING];
    if (r->seq != seq) {
      fail(c, NULL, 0, "socket %d of %d: a slice of message %llu arrived after that request was done", w->j, c->nsocks,
           (unsigned long long)seq);
      return NULL;
    }
    if (size > r->size) {
      fail(c, r, 0, "the peer sent %llu bytes but the posted buffer holds %zu", (unsigned long long)size, r->size);
      return NULL;
    }
    if (recv_all(w->fd, (char *)r->data + off, (size_t)len) != 0) {
      if (!atomic_load(&c->closing)) {
        char why[MESH_ERRLEN / 2];
        sock_error(c, w->j, errno, why, sizeof(why));
        fail(c, r, 0, "%s, in a message of %llu bytes", why, (unsigned long long)size);
      }
      return NULL;
    }
    atomic_fetch_add(&c->progress, 1);
    atomic_store(&r->msg_size, (size_t)size);
    atomic_fetch_add(&r->arrived, 1);
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  return w->comm->is_send ? send_main(w) : recv_main(w);
}

struct mesh_tcp_comm *mesh_tcp_comm_create(int is_send, const int *fds, const struct mesh_route *routes, int nsocks,
                                           const char *desc, const struct mesh_cable_opts *opts, char *err,
                                           size_t errlen) {
  if (nsocks < 1 || nsocks > MESH_MAX_SOCKS) {
    snprintf(err, errlen, "%d sockets, expected 1..%d (%s)", nsocks, MESH_MAX_SOCKS, desc);
    return NULL;
  }
  struct mesh_tcp_comm *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    snprintf(err, errlen, "out of memory (%s)", desc);
    return NULL;
  }
  c->is_send = is_send;
  c->nsocks = nsocks;
  snprintf(c->desc, sizeof(c->desc), "%s", desc);
  c->timeout_ms = opts->timeout_ms;
  snprintf(c->sysfs_root, sizeof(c->sysfs_root), "%s", opts->sysfs_root);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  for (int i = 0; i < MESH_TCP_RING; i++) {
    c->reqs[i].comm = c;
    c->reqs[i].seq = UINT64_MAX;
  }
  for (int j = 0; j < nsocks; j++) {
    struct worker *w = &c->w[j];
    w->comm = c;
    w->j = j;
    w->fd = fds[j];
    mesh_set_blocking(fds[j], 1);
    c->routes[j] = routes[j];
    if (c->timeout_ms > 0) {
      /* without it the receiving side, which sends no data, would never notice a silent peer */
      if (mesh_keepalive_set(fds[j], c->timeout_ms) != 0)
        mesh_warn("socket %d: TCP keepalive not set: %s (%s)", j, strerror(errno), desc);
      mesh_sock_watch_start(&c->watch[j], &routes[j], c->sysfs_root);
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
  }
  for (int j = 0; j < nsocks; j++) {
    if (pthread_create(&c->w[j].thread, NULL, worker_main, &c->w[j]) != 0) {
      snprintf(err, errlen, "cannot start socket thread %d (%s)", j, desc);
      mesh_tcp_comm_destroy(c);
      return NULL;
    }
    char name[16];
    snprintf(name, sizeof(name), "mesh-%s%d", is_send ? "tx" : "rx", j);
    pthread_setname_np(c->w[j].thread, name);
    c->nthreads++;
  }
  return c;
}

static void queue_slice(struct worker *w, struct mesh_tcp_request *r, size_t off, size_t len) {
  uint64_t tail = atomic_load_explicit(&w->qtail, memory_order_relaxed);
  w->q[tail % MESH_TCP_RING] = (struct task){r, off, len};
  atomic_store(&w->qtail, tail + 1);
}

static void wake(struct worker *w) {
  if (atomic_load(&w->waiting)) {
    /* through the mutex once, so a thread between its last look and its wait is in the wait; the signal
     * after unlocking, so the woken thread does not block on the mutex at once */
    pthread_mutex_lock(&w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_cond_signal(&w->cv);
  }
}

int mesh_tcp_post(struct mesh_tcp_comm *c, void *data, size_t size, int tag, struct mesh_tcp_request **req) {
  *req = NULL;
  if (atomic_load(&c->broken)) return -1;
  struct mesh_tcp_request *r = &c->reqs[c->head % MESH_TCP_RING];
  if (r->used) return 0;
  r->used = 1;
  r->seq = c->head;
  r->data = data;
  r->size = size;
  r->tag = tag;
  atomic_store(&r->failed, 0);
  if (c->is_send) {
    int n = mesh_tcp_nslices(size, c->nsocks);
    atomic_store(&r->remaining, n);
    for (int i = 0; i < n; i++) {
      size_t off, len;
      mesh_tcp_slice(size, c->nsocks, i, &off, &len);
      queue_slice(&c->w[(c->next_sock + i) % c->nsocks], r, off, len);
    }
    /* every slice queued before any thread wakes: a woken thread cannot delay the rest of the message */
    for (int i = 0; i < n; i++) wake(&c->w[(c->next_sock + i) % c->nsocks]);
    c->next_sock = (c->next_sock + n) % c->nsocks;
  } else {
    atomic_store(&r->arrived, 0);
    atomic_store(&r->msg_size, 0);
    atomic_store(&c->posted, c->head + 1); /* as for the send queues: posted first, then nwaiting */
    if (atomic_load(&c->nwaiting)) {
      pthread_mutex_lock(&c->mu);
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
    }
  }
  c->head++;
  *req = r;
  return 0;
}

void mesh_tcp_comm_error(struct mesh_tcp_comm *c, char *err, size_t errlen) {
  pthread_mutex_lock(&c->mu);
  snprintf(err, errlen, "%s", atomic_load(&c->broken) ? c->error : "no error");
  pthread_mutex_unlock(&c->mu);
}

/* Called while a request waits: when the comm made no progress since the last look, each socket's cable. */
static void watch(struct mesh_tcp_comm *c) {
  if (c->timeout_ms <= 0 || atomic_load(&c->broken) || atomic_exchange(&c->watching, 1)) return;
  int64_t now = mesh_now_ms();
  if (now >= c->next_watch_ms) {
    c->next_watch_ms = now + WATCH_PERIOD_MS;
    uint64_t p = atomic_load(&c->progress);
    if (p != c->watched_progress) { /* it moves: whatever was seen stalled is not */
      c->watched_progress = p;
      for (int j = 0; j < c->nsocks; j++) c->watch[j].link.active = c->watch[j].ack.active = 0;
    } else {
      char why[MESH_ERRLEN / 2];
      for (int j = 0; j < c->nsocks; j++) {
        if (mesh_sock_watch_check(&c->watch[j], c->w[j].fd, &c->routes[j], c->sysfs_root, c->timeout_ms, now, why,
                                  sizeof(why))) {
          fail(c, NULL, 0, "%s, seen on socket %d of %d", why, j, c->nsocks);
          break;
        }
      }
    }
  }
  atomic_store(&c->watching, 0);
}

/* 1 with *size when every slice of the request is sent (handed to the kernel) or placed. */
static int request_done(const struct mesh_tcp_request *r, size_t *size) {
  if (r->comm->is_send) {
    if (atomic_load(&r->remaining) != 0) return 0;
    *size = r->size;
    return 1;
  }
  int a = atomic_load(&r->arrived);
  size_t s = atomic_load(&r->msg_size);
  if (a == 0 || a != mesh_tcp_nslices(s, r->comm->nsocks)) return 0;
  *size = s;
  return 1;
}

int mesh_tcp_test(struct mesh_tcp_request *r, int *done, size_t *size, char *err, size_t errlen) {
  struct mesh_tcp_comm *c = r->comm;
  *done = 0;
  if (!atomic_load(&r->failed) && !request_done(r, size)) watch(c);
  /* After broken is seen, look again: a thread counts its slice before it can break the comm, so a request
   * whose last slice went through just before the peer closed is done, not failed. */
  int broken = atomic_load(&r->failed) || atomic_load(&c->broken);
  if (!atomic_load(&r->failed) && request_done(r, size)) {
    *done = 1;
    r->used = 0;
    return 0;
  }
  if (broken) {
    pthread_mutex_lock(&c->mu);
    snprintf(err, errlen, "%s", c->error);
    pthread_mutex_unlock(&c->mu);
    return -1;
  }
  return 0;
}

void mesh_tcp_comm_destroy(struct mesh_tcp_comm *c) {
  if (c == NULL) return;
  atomic_store(&c->closing, 1);
  pthread_mutex_lock(&c->mu);
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  for (int j = 0; j < c->nsocks; j++) {
    pthread_mutex_lock(&c->w[j].mu);
    pthread_cond_broadcast(&c->w[j].cv);
    pthread_mutex_unlock(&c->w[j].mu);
  }
  /* A thread may sit in recv() or send(): shutting the socket down wakes it. */
  for (int j = 0; j < c->nsocks; j++) shutdown(c->w[j].fd, SHUT_RDWR);
  for (int j = 0; j < c->nthreads; j++) pthread_join(c->w[j].thread, NULL);
  for (int j = 0; j < c->nsocks; j++) {
    close(c->w[j].fd);
    pthread_mutex_destroy(&c->w[j].mu);
    pthread_cond_destroy(&c->w[j].cv);
  }
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
}
