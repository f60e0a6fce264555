/* SPDX-License-Identifier: GPL-3.0-or-later
 * bench_tcp.c: a CPU microbenchmark of the Mesh plugin's TCP backend over loopback, beside a model of
 * NCCL's socket transport in the same harness.  No GPU: it stands in for nccl_mesh_plugin.py's all_reduce
 * between two "nodes" where NCCL's proxy drives the network.
 *
 * Per run two fresh processes (ranks) each open CHANNELS send and receive connections to the other (NCCL:
 * one per channel) and, for a size M, each sends M bytes to the other and receives M bytes: the bytes a
 * 2-rank ring all_reduce of M moves per rank, so M / time is its bus bandwidth.  Messages are STEP bytes
 * (NCCL's Simple protocol: buffer 4 MiB / 8 steps = 512 KiB), WINDOW in flight per connection, driven by
 * one thread per rank (NCCL's proxy) that posts and tests in order.  A first, untimed pass checks every
 * byte; the timed passes move the same pattern.  Up to 16 MiB a cell is the median of 31 timed transfers, above
 * it one transfer; a row's figure is the median over the rounds.
 *
 * Modes:
 *   mesh        the plugin (dlopen, ncclNetPlugin_v11: listen/connect/accept/isend/irecv/test), over lo
 *   mesh@PATH   the same with another build of the library (a before/after comparison in one run)
 *   sock        model of NCCL's socket transport with its defaults (no helper threads: the size and the
 *               data go over one socket, progressed by the proxy thread in test())
 *   sock-tuned  the model with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4: a control socket carries
 *               each message's size; the data is cut into tasks of max(64 KiB, size/16) handed round-robin
 *               to 16 sockets, 4 helper threads each multiplexing 4 of them without blocking
 * The model is this file's own code, written from the transport's documented behaviour; it is not NCCL.
 *
 *   bench_tcp [--modes mesh,sock,sock-tuned] [--sizes 1,4,16,64,256,1024] [--channels 2] [--step 524288]
 *             [--window 8] [--rounds 3] [--lib PATH]   (MiB sizes; environment: NCCL_MESH_*)
 * Prints one JSON line per run and a table of the medians.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mesh.h"

#define MAXCH 16
#define MAXWIN 32
#define MAXSIZES 16
#define HANDLE MESH_ABI_HANDLE_MAXSIZE

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_tcp: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A transport as the proxy sees it; connect and accept may need calling again (0 and no comm yet). */
struct xport {
  void (*listen)(void *handle, void **lc);
  void (*connect)(void *handle, void **sc);
  void (*accept)(void *lc, void **rc);
  void (*isend)(void *sc, void *buf, size_t n, void **req); /* *req NULL: try again later */
  void (*irecv)(void *rc, void *buf, size_t n, void **req);
  int (*test)(void *req, size_t *size); /* 1 done, 0 not yet; dies on errors */
};

/* ---------------- the plugin ---------------- */
static const mesh_abi_net_v11_t *P;
static void *pctx;

static void plog(mesh_abi_log_level_t level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != MESH_ABI_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

#define PCALL(e)                                                   \
  do {                                                             \
    if ((e) != MESH_ABI_SUCCESS) die("%s failed", #e);             \
  } while (0)

static void m_listen(void *h, void **lc) { PCALL(P->listen(pctx, 0, h, lc)); }
static void m_connect(void *h, void **sc) {
  mesh_abi_device_handle_t *d = NULL;
  PCALL(P->connect(pctx, 0, h, sc, &d));
}
static void m_accept(void *lc, void **rc) {
  mesh_abi_device_handle_t *d = NULL;
  PCALL(P->accept(lc, rc, &d));
}
static void *g_tcp_mh; /* TCP backend: regMr hands back one token for every buffer */
static void m_isend(void *sc, void *buf, size_t n, void **req) { PCALL(P->isend(sc, buf, n, 0, g_tcp_mh, NULL, req)); }
static void m_irecv(void *rc, void *buf, size_t n, void **req) {
  int tag = 0;
  PCALL(P->irecv(rc, 1, &buf, &n, &tag, &g_tcp_mh, NULL, req));
}
static int m_test(void *req, size_t *size) {
  int done = 0, s = 0;
  PCALL(P->test(req, &done, &s));
  *size = (size_t)s;
  return done;
}
static const struct xport mesh_xport = {m_listen, m_connect, m_accept, m_isend, m_irecv, m_test};

/* ---------------- model of NCCL's socket transport ---------------- */
#define S_MAXSOCK 64
#define S_MAXTHR 16
#define S_MAXREQ 32
#define S_MINTASK (64 * 1024)
static int s_nthreads, s_nspt;

struct s_task {
  char *data;
  size_t size;
  size_t off; /* written by the helper thread, read by test() */
  atomic_int state; /* 0 free, 1 queued, 2 done, -1 failed */
};
struct s_fifo { /* one socket's tasks, in order */
  struct s_task t[S_MAXREQ];
  unsigned head, tail; /* tail: the proxy; head: the helper thread */
};
struct s_comm;
struct s_thread {
  struct s_comm *c;
  int idx;
  pthread_t th;
  int efd; /* wakes the thread when the proxy queues a task */
  atomic_int stop;
};
struct s_req {
  int used, stage; /* stage 0: size not exchanged, 1: data */
  char *data;
  size_t size, off;
  uint8_t ctrl[4];
  size_t ctrl_off;
  int nsubs;
  struct s_task *subs[S_MAXSOCK];
};
struct s_comm {
  int is_send;
  int ctrl;
  int nsocks, nthreads;
  int fds[S_MAXSOCK];
  struct s_fifo fifo[S_MAXSOCK];
  int next_sock;
  struct s_thread th[S_MAXTHR];
  struct s_req reqs[S_MAXREQ];
};
struct s_listen {
  int fd;
};

/* Non-blocking progress of one transfer (the plugin's own helpers: the model and the plugin move bytes alike). */
static int s_move(int is_send, int fd, char *p, size_t len, size_t *off) {
  return (is_send ? mesh_send_some(fd, p, len, off) : mesh_recv_some(fd, p, len, off)) == 0 ? 0 : -1;
}

/* A helper thread: progresses the head task of each of its sockets without blocking; when none moved,
 * it waits in poll() for its sockets or a new task (NCCL's thread spins instead: the model is kinder). */
static void *s_helper(void *arg) {
  struct s_thread *t = arg;
  struct s_comm *c = t->c;
  for (;;) {
    if (atomic_load(&t->stop)) return NULL;
    struct pollfd pf[S_MAXSOCK + 1];
    int np = 0, moved = 0;
    for (int s = t->idx; s < c->nsocks; s += c->nthreads) {
      struct s_fifo *f = &c->fifo[s];
      unsigned tail = __atomic_load_n(&f->tail, __ATOMIC_ACQUIRE);
      if (f->head == tail) continue;
      struct s_task *k = &f->t[f->head % S_MAXREQ];
      size_t before = k->off;
      if (s_move(c->is_send, c->fds[s], k->data, k->size, &k->off) != 0) {
        atomic_store(&k->state, -1);
        return NULL;
      }
      moved |= k->off != before;
      if (k->off == k->size) {
        atomic_store(&k->state, 2);
        f->head++;
        moved = 1;
      } else {
        pf[np].fd = c->fds[s];
        pf[np].events = c->is_send ? POLLOUT : POLLIN;
        np++;
      }
    }
    if (moved) continue;
    pf[np].fd = t->efd;
    pf[np].events = POLLIN;
    poll(pf, (nfds_t)np + 1, 100);
    if (pf[np].revents & POLLIN) {
      uint64_t v;
      if (read(t->efd, &v, sizeof(v)) < 0) { /* nothing to do: the next poll sees it again */
      }
    }
  }
}

static int s_connect_one(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) die("model connect: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

static struct s_comm *s_new(int is_send) {
  struct s_comm *c = calloc(1, sizeof(*c));
  if (!c) die("out of memory");
  c->is_send = is_send;
  c->nthreads = s_nthreads;
  c->nsocks = s_nthreads * s_nspt;
  return c;
}

static void s_start_threads(struct s_comm *c) {
  for (int i = 0; i < c->nthreads; i++) {
    c->th[i].c = c;
    c->th[i].idx = i;
    c->th[i].efd = eventfd(0, EFD_NONBLOCK);
    if (c->th[i].efd < 0 || pthread_create(&c->th[i].th, NULL, s_helper, &c->th[i]) != 0) die("helper thread");
  }
}

static void s_listen(void *h, void **lc) {
  struct s_listen *l = calloc(1, sizeof(*l));
  l->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof(a);
  if (bind(l->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l->fd, 128) != 0 ||
      getsockname(l->fd, (struct sockaddr *)&a, &sl) != 0)
    die("model listen: %s", strerror(errno));
  memset(h, 0, HANDLE);
  memcpy(h, &a.sin_port, 2);
  *lc = l;
}

/* Blocking set-up (the kernel finishes handshakes before accept, so both ranks may connect first). */
static void s_connect(void *h, void **sc) {
  struct s_comm *c = s_new(1);
  uint16_t port;
  memcpy(&port, h, 2);
  port = ntohs(port);
  for (int i = 0; i <= c->nsocks; i++) {
    int fd = s_connect_one(port);
    uint8_t idx = (uint8_t)i;
    if (send(fd, &idx, 1, 0) != 1) die("model hello");
    if (i == c->nsocks) c->ctrl = fd;
    else c->fds[i] = fd;
  }
  s_start_threads(c);
  *sc = c;
}

static void s_accept(void *lc, void **rc) {
  struct s_listen *l = lc;
  struct s_comm *c = s_new(0);
  for (int i = 0; i <= c->nsocks; i++) {
    int fd = accept(l->fd, NULL, NULL);
    uint8_t idx;
    if (fd < 0 || recv(fd, &idx, 1, MSG_WAITALL) != 1 || idx > c->nsocks) die("model accept");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (idx == c->nsocks) c->ctrl = fd;
    else c->fds[idx] = fd;
  }
  s_start_threads(c);
  *rc = c;
}

static void s_post(struct s_comm *c, void *buf, size_t n, void **req) {
  *req = NULL;
  for (int i = 0; i < S_MAXREQ; i++) {
    struct s_req *r = &c->reqs[i];
    if (r->used) continue;
    memset(r, 0, sizeof(*r));
    r->used = 1;
    r->data = buf;
    r->size = n;
    *req = r;
    return;
  }
}
static void s_isend(void *sc, void *buf, size_t n, void **req) { s_post(sc, buf, n, req); }
static void s_irecv(void *rc, void *buf, size_t n, void **req) { s_post(rc, buf, n, req); }

static int s_test_comm(struct s_comm *c, struct s_req *r, size_t *size) {
  if (r->stage == 0) { /* the size over the control socket, in request order */
    if (c->is_send && r->ctrl_off == 0) {
      uint32_t v = (uint32_t)r->size;
      memcpy(r->ctrl, &v, 4);
    }
    if (s_move(c->is_send, c->ctrl, (char *)r->ctrl, 4, &r->ctrl_off) != 0) die("model control socket");
    if (r->ctrl_off < 4) return 0;
    if (!c->is_send) {
      uint32_t v;
      memcpy(&v, r->ctrl, 4);
      if (v > r->size) die("model: message of %u bytes into %zu", v, r->size);
      r->size = v;
    }
    r->stage = 1;
    if (c->nsocks > 0) {
      size_t task = (r->size + (size_t)c->nsocks - 1) / (size_t)c->nsocks;
      if (task < S_MINTASK) task = S_MINTASK;
      for (size_t off = 0; off < r->size; off += task) {
        int s = c->next_sock;
        c->next_sock = (c->next_sock + 1) % c->nsocks;
        struct s_fifo *f = &c->fifo[s];
        struct s_task *k = &f->t[f->tail % S_MAXREQ];
        k->data = r->data + off;
        k->size = r->size - off < task ? r->size - off : task;
        k->off = 0;
        atomic_store(&k->state, 1);
        r->subs[r->nsubs++] = k;
        __atomic_store_n(&f->tail, f->tail + 1, __ATOMIC_RELEASE);
        uint64_t one = 1;
        if (write(c->th[s % c->nthreads].efd, &one, sizeof(one)) < 0) die("eventfd");
      }
    }
  }
  if (c->nsocks == 0) {
    if (s_move(c->is_send, c->ctrl, r->data, r->size, &r->off) != 0) die("model data on the control socket");
    if (r->off < r->size) return 0;
  } else {
    for (int i = 0; i < r->nsubs; i++) {
      int st = atomic_load(&r->subs[i]->state);
      if (st < 0) die("model helper thread failed");
      if (st != 2) return 0;
    }
  }
  *size = r->size;
  r->used = 0;
  return 1;
}

/* ---------------- the harness ---------------- */
struct cfg {
  int nsizes;
  size_t sizes[MAXSIZES];
  int channels, window, rounds;
  size_t step;
  char lib[512];
};

static void xwrite(int fd, const void *p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n) die("control pipe write: %s", strerror(errno));
}
static void xread(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, (char *)p + got, n - got);
    if (k <= 0) die("control pipe read: %s", k == 0 ? "closed" : strerror(errno));
    got += (size_t)k;
  }
}

static unsigned char pattern(int src, uint64_t msg, size_t i) {
  return (unsigned char)((i * 131u) ^ (msg * 7u) ^ ((unsigned)src << 5) ^ (i >> 11));
}

struct chan {
  void *sc, *rc, *lc;
  struct s_comm *ssc, *src; /* the model's comms, for its test */
  char *sbuf, *rbuf;
  void *sreq[MAXWIN], *rreq[MAXWIN];
  uint64_t sposted, sdone, rposted, rdone;
};

static int is_model;
static double cpu_seconds(void);
static int cmp_double(const void *a, const void *b);

static int test_req(const struct xport *x, struct s_comm *c, void *req, size_t *size) {
  if (is_model) return s_test_comm(c, req, size);
  return x->test(req, size);
}

/* Moves `total` bytes each way over the channels; checks every byte when check is set. */
static void transfer(const struct xport *x, struct chan *ch, const struct cfg *cf, size_t total, int rank, int check) {
  size_t per = (total + (size_t)cf->channels - 1) / (size_t)cf->channels;
  uint64_t nmsg = (per + cf->step - 1) / cf->step;
  for (int c = 0; c < cf->channels; c++) ch[c].sposted = ch[c].sdone = ch[c].rposted = ch[c].rdone = 0;
  double t0 = now();
  for (;;) {
    int left = 0;
    uint64_t before = 0, after = 0;
    for (int c = 0; c < cf->channels; c++) before += ch[c].sposted + ch[c].sdone + ch[c].rposted + ch[c].rdone;
    for (int c = 0; c < cf->channels; c++) {
      struct chan *h = &ch[c];
      size_t msg_len = cf->step;
      while (h->rposted < nmsg && h->rposted - h->rdone < (uint64_t)cf->window) {
        int slot = (int)(h->rposted % (uint64_t)cf->window);
        void *req = NULL;
        x->irecv(h->rc, h->rbuf + (size_t)slot * cf->step, cf->step, &req);
        if (!req) break;
        h->rreq[slot] = req;
        h->rposted++;
      }
      while (h->sposted < nmsg && h->sposted - h->sdone < (uint64_t)cf->window) {
        int slot = (int)(h->sposted % (uint64_t)cf->window);
        size_t len = h->sposted == nmsg - 1 ? per - (nmsg - 1) * cf->step : msg_len;
        char *b = h->sbuf + (size_t)slot * cf->step;
        if (check)
          for (size_t i = 0; i < len; i++) b[i] = (char)pattern(rank, h->sposted * 31 + (uint64_t)c, i);
        void *req = NULL;
        x->isend(h->sc, b, len, &req);
        if (!req) break;
        h->sreq[slot] = req;
        h->sposted++;
      }
      size_t got;
      while (h->sdone < h->sposted && test_req(x, h->ssc, h->sreq[h->sdone % (uint64_t)cf->window], &got)) h->sdone++;
      while (h->rdone < h->rposted && test_req(x, h->src, h->rreq[h->rdone % (uint64_t)cf->window], &got)) {
        size_t want = h->rdone == nmsg - 1 ? per - (nmsg - 1) * cf->step : cf->step;
        if (got != want) die("channel %d message %lu: %zu bytes, expected %zu", c, (unsigned long)h->rdone, got, want);
        if (check) {
          const char *b = h->rbuf + (size_t)(h->rdone % (uint64_t)cf->window) * cf->step;
          for (size_t i = 0; i < got; i++)
            if ((unsigned char)b[i] != pattern(1 - rank, h->rdone * 31 + (uint64_t)c, i))
              die("channel %d message %lu: byte %zu differs", c, (unsigned long)h->rdone, i);
        }
        h->rdone++;
      }
      left += h->sdone < nmsg || h->rdone < nmsg;
    }
    if (!left) break;
    /* Nothing moved: let the transport's threads run, as NCCL's proxy thread does when idle. */
    for (int c = 0; c < cf->channels; c++) after += ch[c].sposted + ch[c].sdone + ch[c].rposted + ch[c].rdone;
    if (after == before) sched_yield();
    if (now() - t0 > 300) die("transfer of %zu bytes incomplete after 300 s", total);
  }
}

static void rank_main(int rank, int ctl, const char *mode, const struct cfg *cf, int out) {
  const struct xport *x = &mesh_xport;
  static const struct xport model = {s_listen, s_connect, s_accept, s_isend, s_irecv, NULL};
  if (strncmp(mode, "mesh", 4) == 0) {
    const char *lib = mode[4] == '@' ? mode + 5 : cf->lib;
    setenv("NCCL_MESH_TRANSPORT", "tcp", 0);
    setenv("NCCL_MESH_IFNAME", "lo", 0);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h || !(P = dlsym(h, "ncclNetPlugin_v11"))) die("loading %s: %s", lib, dlerror());
    PCALL(P->init(&pctx, 1, NULL, plog, NULL));
  } else {
    is_model = 1;
    x = &model;
    s_nthreads = strcmp(mode, "sock-tuned") == 0 ? 4 : 0;
    s_nspt = s_nthreads ? 4 : 0;
  }
  struct chan ch[MAXCH];
  memset(ch, 0, sizeof(ch));
  char mine[MAXCH][HANDLE], theirs[MAXCH][HANDLE];
  for (int c = 0; c < cf->channels; c++) x->listen(mine[c], &ch[c].lc);
  xwrite(ctl, mine, (size_t)cf->channels * HANDLE);
  xread(ctl, theirs, (size_t)cf->channels * HANDLE);
  double t0 = now();
  for (;;) {
    int pending = 0;
    for (int c = 0; c < cf->channels; c++) {
      if (!ch[c].sc) x->connect(theirs[c], &ch[c].sc);
      if (!ch[c].rc) x->accept(ch[c].lc, &ch[c].rc);
      pending += !ch[c].sc + !ch[c].rc;
    }
    if (!pending) break;
    if (now() - t0 > 60) die("connections incomplete after 60 s");
    usleep(100);
  }
  for (int c = 0; c < cf->channels; c++) {
    ch[c].ssc = ch[c].sc;
    ch[c].src = ch[c].rc;
    ch[c].sbuf = malloc(cf->step * (size_t)cf->window);
    ch[c].rbuf = malloc(cf->step * (size_t)cf->window);
    if (!ch[c].sbuf || !ch[c].rbuf) die("out of memory");
    if (!is_model) {
      PCALL(P->regMr(ch[c].sc, ch[c].sbuf, cf->step * (size_t)cf->window, MESH_ABI_PTR_HOST, &g_tcp_mh));
      PCALL(P->regMr(ch[c].rc, ch[c].rbuf, cf->step * (size_t)cf->window, MESH_ABI_PTR_HOST, &g_tcp_mh));
    }
  }
  /* Checked pass at the smallest size and at 16 steps per channel (every slot of the window, reused). */
  size_t checked = cf->step * (size_t)cf->channels * 16;
  transfer(x, ch, cf, checked, rank, 1);
  char sync = 's';
  for (int k = 0; k < cf->nsizes; k++) {
    size_t total = cf->sizes[k];
    transfer(x, ch, cf, total < ((size_t)8 << 20) ? total : ((size_t)8 << 20), rank, 0); /* warm-up */
    xwrite(ctl, &sync, 1);
    xread(ctl, &sync, 1);
    /* Up to 16 MiB the median of 31 timed repetitions: robust to the scheduling outliers of a shared host. */
    double cpu = cpu_seconds(), times[31];
    int reps = total <= ((size_t)16 << 20) ? 31 : 1;
    for (int i = 0; i < reps; i++) {
      double t = now();
      transfer(x, ch, cf, total, rank, 0);
      times[i] = now() - t;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    double mine[2] = {times[reps / 2], (cpu_seconds() - cpu) / reps}, other[2];
    xwrite(ctl, mine, sizeof(mine));
    xread(ctl, other, sizeof(other));
    /* the slower rank's time; both ranks' CPU (every thread: the transport's and the proxy's) */
    double res[2] = {mine[0] > other[0] ? mine[0] : other[0], mine[1] + other[1]};
    if (rank == 0) xwrite(out, res, sizeof(res));
  }
  xwrite(ctl, &sync, 1);
  xread(ctl, &sync, 1);
  if (!is_model) {
    for (int c = 0; c < cf->channels; c++) {
      PCALL(P->closeSend(ch[c].sc));
      PCALL(P->closeRecv(ch[c].rc));
      PCALL(P->closeListen(ch[c].lc));
    }
    PCALL(P->finalize(pctx));
  }
  /* The model's helper threads end with the process. */
  exit(0);
}

/* mesh@/x/before.so -> mesh@before */
static const char *label(const char *mode) {
  static char out[8][64];
  static int k;
  if (strncmp(mode, "mesh@", 5) != 0) return mode;
  const char *base = strrchr(mode, '/') ? strrchr(mode, '/') + 1 : mode + 5;
  char *o = out[k++ % 8];
  snprintf(o, 64, "mesh@%.*s", (int)strcspn(base, "."), base);
  return o;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* One row per size, one column per mode: the median over the rounds of GB/s (cpu=0) or CPU ns per byte. */
static void print_table(const struct cfg *cf, char (*modes)[512], int nmodes, double (*v)[16][MAXSIZES], int cpu);

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void print_table(const struct cfg *cf, char (*modes)[512], int nmodes, double (*v)[16][MAXSIZES], int cpu) {
  printf("%-8s", "MiB");
  for (int m = 0; m < nmodes; m++) printf(" %11s", label(modes[m]));
  printf("\n");
  for (int k = 0; k < cf->nsizes; k++) {
    printf("%-8zu", cf->sizes[k] >> 20);
    for (int m = 0; m < nmodes; m++) {
      double x[16];
      for (int r = 0; r < cf->rounds; r++)
        x[r] = cpu ? v[m][r][k] / (double)cf->sizes[k] * 1e9 : (double)cf->sizes[k] / v[m][r][k] / 1e9;
      qsort(x, (size_t)cf->rounds, sizeof(double), cmp_double);
      printf(cpu ? " %11.3f" : " %11.2f", x[cf->rounds / 2]);
    }
    printf("\n");
  }
}

int main(int argc, char **argv) {
  struct cfg cf = {.channels = 2, .window = 8, .rounds = 3, .step = 512 * 1024};
  const char *modes = "mesh,sock,sock-tuned", *sizes = "1,4,16,64,256,1024";
  snprintf(cf.lib, sizeof(cf.lib), "%s", "../../files/plugin_src/libnccl-net-mesh.so");
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--modes")) modes = argv[i + 1];
    else if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
    else if (!strcmp(argv[i], "--channels")) cf.channels = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--window")) cf.window = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds")) cf.rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--step")) cf.step = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--lib")) snprintf(cf.lib, sizeof(cf.lib), "%s", argv[i + 1]);
    else die("unknown option %s", argv[i]);
  }
  if (cf.channels < 1 || cf.channels > MAXCH || cf.window < 1 || cf.window > MAXWIN || cf.rounds < 1 || cf.rounds > 16 ||
      cf.step < 1 || cf.step > ((size_t)64 << 20))
    die("bad --channels (1..%d), --window (1..%d), --rounds (1..16) or --step", MAXCH, MAXWIN);
  for (const char *p = sizes; *p && cf.nsizes < MAXSIZES;) {
    cf.sizes[cf.nsizes++] = strtoull(p, NULL, 10) << 20;
    p = strchr(p, ',');
    if (!p) break;
    p++;
  }
  char mode_list[8][512];
  int nmodes = 0;
  for (const char *p = modes; *p && nmodes < 8;) {
    size_t n = strcspn(p, ",");
    snprintf(mode_list[nmodes], sizeof(mode_list[0]), "%.*s", (int)n, p);
    if (strcmp(mode_list[nmodes], "mesh") && strncmp(mode_list[nmodes], "mesh@", 5) &&
        strcmp(mode_list[nmodes], "sock") && strcmp(mode_list[nmodes], "sock-tuned"))
      die("unknown mode %s (mesh, mesh@PATH, sock, sock-tuned)", mode_list[nmodes]);
    nmodes++;
    p += n;
    if (*p) p++;
  }
  signal(SIGPIPE, SIG_IGN);
  static double res[8][16][MAXSIZES], cpu[8][16][MAXSIZES];
  for (int r = 0; r < cf.rounds; r++) {
    for (int mi = 0; mi < nmodes; mi++) {
      /* modes alternate, and each round starts with the next one: drift on the machine and the first run of a
       * round (measurably slower here) hit all alike */
      int m = (mi + r) % nmodes;
      int sp[2], pp[2];
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0 || pipe(pp) != 0) die("socketpair");
      pid_t pid[2];
      for (int rank = 0; rank < 2; rank++) {
        pid[rank] = fork();
        if (pid[rank] == 0) {
          close(pp[0]);
          rank_main(rank, sp[rank], mode_list[m], &cf, pp[1]);
        }
      }
      close(pp[1]);
      for (int k = 0; k < cf.nsizes; k++) {
        double v[2];
        xread(pp[0], v, sizeof(v));
        res[m][r][k] = v[0];
        cpu[m][r][k] = v[1];
      }
      close(pp[0]);
      close(sp[0]);
      close(sp[1]);
      for (int rank = 0; rank < 2; rank++) {
        int st;
        waitpid(pid[rank], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("%s rank %d failed (status 0x%x)", mode_list[m], rank, st);
      }
      printf("{\"round\": %d, \"mode\": \"%s\", \"GBps\": {", r, label(mode_list[m]));
      for (int k = 0; k < cf.nsizes; k++)
        printf("%s\"%zuMiB\": %.2f", k ? ", " : "", cf.sizes[k] >> 20, (double)cf.sizes[k] / res[m][r][k] / 1e9);
      printf("}, \"cpu_ns_per_byte\": {");
      for (int k = 0; k < cf.nsizes; k++)
        printf("%s\"%zuMiB\": %.3f", k ? ", " : "", cf.sizes[k] >> 20, cpu[m][r][k] / (double)cf.sizes[k] * 1e9);
      printf("}}\n");
      fflush(stdout);
    }
  }
  printf("median GB/s (bytes each way / time; = 2-rank all_reduce bus bandwidth), %d channels, %zu KiB steps, "
         "window %d, %d rounds\n",
         cf.channels, cf.step >> 10, cf.window, cf.rounds);
  print_table(&cf, mode_list, nmodes, res, 0);
  /* On a busy machine the wall clock mostly measures the neighbours; CPU per byte is the steadier figure. */
  printf("median CPU ns per byte moved (user+sys, both ranks; lower is better)\n");
  print_table(&cf, mode_list, nmodes, cpu, 1);
  return 0;
}
