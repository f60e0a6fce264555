/* SPDX-License-Identifier: GPL-3.0-or-later
 * func_peer.c: one rank of the plugin's functional test.  It loads libnccl-net-mesh.so the way
 * NCCL does (dlopen + the ncclNetPlugin_vN symbol), listens once per peer, publishes its handles as
 * files in a directory every rank sees, connects to and accepts from every peer without blocking,
 * then exchanges checked data of every size in the list with all peers at once.
 *
 *   func_peer DIR RANK NRANKS [ABI_VERSION(8..11)] [MAX_BYTES]
 * Environment: MESH_PLUGIN_LIB (path of the library), the plugin's NCCL_MESH_* variables.
 * FUNC_STREAM_S=N streams instead (run_cable.sh): MAX_BYTES-sized messages both ways with every peer for N
 * seconds, "streaming" printed once data moves.  A plugin call that fails during the stream ends the rank
 * with status 3, after printing the wall-clock time of the failure and keeping its connections open for
 * FUNC_LINGER_S seconds (default 3), so that its peers see the cable's loss themselves, not this exit.
 * FUNC_STREAM_ONEWAY=1 streams one way only, from the lower rank of each pair to the higher: the sender then
 * always has a send waiting on its peer's acknowledgements and the receiver never has data of its own in
 * flight, so which sign tells a silent cable at each end does not depend on where a round stood.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mesh_abi.h"

#define MAXR 16
static int version = 11;
static const mesh_abi_net_v8_t *n8;
static const mesh_abi_net_v9_t *n9;
static const mesh_abi_net_v10_t *n10;
static const mesh_abi_net_v11_t *n11;
static void *ctx;
static int rank, nranks;
static int streaming; /* a failure now is the stream's end: status 3 */
static double stream_t0;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rank %d: FAIL: ", rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void logger(mesh_abi_log_level_t level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)flags, (void)file, (void)line;
  if (level != MESH_ABI_LOG_WARN && !getenv("FUNC_VERBOSE")) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rank %d: plugin: ", rank);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void stream_ended(const char *call, int rc) {
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  printf("rank %d: stream ended after %.1f s: %s returned %d, at %lld.%09ld\n", rank, now() - stream_t0, call, rc,
         (long long)wall.tv_sec, wall.tv_nsec);
  fflush(stdout);
  fflush(stderr);
  const char *l = getenv("FUNC_LINGER_S");
  sleep(l ? (unsigned)atoi(l) : 3);
  _exit(3);
}

#define CALL(expr)                                    \
  do {                                                \
    mesh_abi_result_t rc_ = (expr);                   \
    if (rc_ != MESH_ABI_SUCCESS) {                    \
      if (streaming) stream_ended(#expr, rc_);        \
      die("%s returned %d", #expr, rc_);              \
    }                                                 \
  } while (0)

static void net_listen(void *handle, void **lc) {
  if (version == 11) CALL(n11->listen(ctx, 0, handle, lc));
  else if (version == 10) CALL(n10->listen(0, handle, lc));
  else if (version == 9) CALL(n9->listen(0, handle, lc));
  else CALL(n8->listen(0, handle, lc));
}
static void net_connect(void *handle, void **sc) {
  mesh_abi_device_handle_t *dev = NULL;
  mesh_abi_comm_config_t cfg = {MESH_ABI_TRAFFIC_CLASS_UNDEF};
  if (version == 11) CALL(n11->connect(ctx, 0, handle, sc, &dev));
  else if (version == 10) CALL(n10->connect(0, &cfg, handle, sc, &dev));
  else if (version == 9) CALL(n9->connect(0, handle, sc, &dev));
  else CALL(n8->connect(0, handle, sc, &dev));
}
static void net_accept(void *lc, void **rc) {
  mesh_abi_device_handle_t *dev = NULL;
  if (version == 11) CALL(n11->accept(lc, rc, &dev));
  else if (version == 10) CALL(n10->accept(lc, rc, &dev));
  else if (version == 9) CALL(n9->accept(lc, rc, &dev));
  else CALL(n8->accept(lc, rc, &dev));
}
static void net_reg(void *comm, void *buf, size_t size, void **mh) {
  if (version == 11) CALL(n11->regMr(comm, buf, size, MESH_ABI_PTR_HOST, mh));
  else if (version == 10) CALL(n10->regMr(comm, buf, size, MESH_ABI_PTR_HOST, mh));
  else if (version == 9) CALL(n9->regMr(comm, buf, size, MESH_ABI_PTR_HOST, mh));
  else CALL(n8->regMr(comm, buf, size, MESH_ABI_PTR_HOST, mh));
}
static void net_isend(void *sc, void *buf, size_t size, void *mh, void **req) {
  if (version == 11) CALL(n11->isend(sc, buf, size, 7, mh, NULL, req));
  else if (version == 10) CALL(n10->isend(sc, buf, size, 7, mh, NULL, req));
  else if (version == 9) CALL(n9->isend(sc, buf, size, 7, mh, req));
  else CALL(n8->isend(sc, buf, (int)size, 7, mh, req));
}
static void net_irecv(void *rc, void *buf, size_t size, void *mh, void **req) {
  int tag = 7;
  if (version == 8) {
    int s = (int)size;
    CALL(n8->irecv(rc, 1, &buf, &s, &tag, &mh, req));
  } else if (version == 9) {
    CALL(n9->irecv(rc, 1, &buf, &size, &tag, &mh, req));
  } else if (version == 10) {
    CALL(n10->irecv(rc, 1, &buf, &size, &tag, &mh, NULL, req));
  } else {
    CALL(n11->irecv(rc, 1, &buf, &size, &tag, &mh, NULL, req));
  }
}
static void net_test(void *req, int *done, int *size) {
  const mesh_abi_net_v8_t *any8 = n8;
  if (version == 11) CALL(n11->test(req, done, size));
  else if (version == 10) CALL(n10->test(req, done, size));
  else if (version == 9) CALL(n9->test(req, done, size));
  else CALL(any8->test(req, done, size));
}
static void net_close(void *sc, void *rc, void *lc) {
  if (version == 11) {
    CALL(n11->closeSend(sc));
    CALL(n11->closeRecv(rc));
    CALL(n11->closeListen(lc));
  } else if (version == 10) {
    CALL(n10->closeSend(sc));
    CALL(n10->closeRecv(rc));
    CALL(n10->closeListen(lc));
  } else if (version == 9) {
    CALL(n9->closeSend(sc));
    CALL(n9->closeRecv(rc));
    CALL(n9->closeListen(lc));
  } else {
    CALL(n8->closeSend(sc));
    CALL(n8->closeRecv(rc));
    CALL(n8->closeListen(lc));
  }
}

static unsigned char pattern(int src, int dst, size_t size, size_t i) {
  return (unsigned char)((i * 131u) ^ (size * 7u) ^ ((unsigned)src << 4) ^ (unsigned)dst ^ (i >> 12));
}

/* One pass of test over every peer's send and receive not done yet: how many are left. */
static int test_pass(void **sreq, void **rreq, int *sdone, int *rdone, int *rsize) {
  int left = 0;
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    int dummy;
    if (!sdone[j]) net_test(sreq[j], &sdone[j], &dummy);
    if (!rdone[j]) net_test(rreq[j], &rdone[j], &rsize[j]);
    left += !sdone[j] + !rdone[j];
  }
  return left;
}

/* Messages of `size` bytes both ways (or one way) with every peer, round after round, until `seconds` pass. */
static int stream(double seconds, size_t size, void **sc, void **rc, void **lc) {
  const int oneway = getenv("FUNC_STREAM_ONEWAY") && atoi(getenv("FUNC_STREAM_ONEWAY")) != 0;
  unsigned char *sbuf[MAXR], *rbuf[MAXR];
  void *smh[MAXR], *rmh[MAXR];
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    sbuf[j] = malloc(size + 1);
    rbuf[j] = malloc(size + 1);
    if (!sbuf[j] || !rbuf[j]) die("out of memory");
    for (size_t i = 0; i < size; i++) sbuf[j][i] = pattern(rank, j, size, i);
    net_reg(sc[j], sbuf[j], size + 1, &smh[j]);
    net_reg(rc[j], rbuf[j], size + 1, &rmh[j]);
  }
  streaming = 1;
  stream_t0 = now();
  long rounds = 0;
  while (now() - stream_t0 < seconds) {
    void *sreq[MAXR] = {0}, *rreq[MAXR] = {0};
    int sdone[MAXR] = {0}, rdone[MAXR] = {0}, rsize[MAXR] = {0};
    for (int j = 0; j < nranks; j++) {
      if (j == rank) continue;
      rdone[j] = oneway && j > rank; /* one way: nothing to receive from a higher rank, nothing to send lower */
      sdone[j] = oneway && j < rank;
      rsize[j] = rdone[j] ? (int)size : 0;
      while (!rdone[j] && !rreq[j]) net_irecv(rc[j], rbuf[j], size, rmh[j], &rreq[j]);
      while (!sdone[j] && !sreq[j]) net_isend(sc[j], sbuf[j], size, smh[j], &sreq[j]);
    }
    while (test_pass(sreq, rreq, sdone, rdone, rsize)) usleep(200); /* a proxy's pace; the machine is shared */
    for (int j = 0; j < nranks; j++) {
      if (j == rank || (oneway && j > rank)) continue;
      if ((size_t)rsize[j] != size || (size && rbuf[j][size / 2] != pattern(j, rank, size, size / 2)))
        die("stream round %ld from rank %d: %d bytes, or not the data sent", rounds, j, rsize[j]);
    }
    if (rounds++ == 0) {
      printf("rank %d: streaming\n", rank);
      fflush(stdout);
    }
  }
  streaming = 0;
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    net_close(sc[j], rc[j], lc[j]);
    free(sbuf[j]);
    free(rbuf[j]);
  }
  printf("rank %d: OK stream, %ld rounds of %zu bytes with %d peers in %.1f s\n", rank, rounds, size, nranks - 1,
         seconds);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) die("usage: func_peer DIR RANK NRANKS [VERSION] [MAX_BYTES]");
  const char *dir = argv[1];
  rank = atoi(argv[2]);
  nranks = atoi(argv[3]);
  if (argc > 4) version = atoi(argv[4]);
  size_t max_bytes = argc > 5 ? strtoull(argv[5], NULL, 10) : (size_t)64 << 20;
  if (nranks < 2 || nranks > MAXR || rank < 0 || rank >= nranks) die("bad rank %d of %d", rank, nranks);
  const char *lib = getenv("MESH_PLUGIN_LIB") ? getenv("MESH_PLUGIN_LIB") : "./libnccl-net-mesh.so";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) die("dlopen %s: %s", lib, dlerror());
  char sym[32];
  snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
  void *table = dlsym(h, sym);
  if (table == NULL) die("%s not exported", sym);
  n8 = table, n9 = table, n10 = table, n11 = table;
  if (version == 11) CALL(n11->init(&ctx, 1, NULL, logger, NULL));
  else if (version == 10) CALL(n10->init(logger, NULL));
  else if (version == 9) CALL(n9->init(logger));
  else CALL(n8->init(logger));

  char handles[MAXR][MESH_ABI_HANDLE_MAXSIZE], peer_handles[MAXR][MESH_ABI_HANDLE_MAXSIZE];
  void *lc[MAXR] = {0}, *sc[MAXR] = {0}, *rc[MAXR] = {0};
  char path[512], tmp[520];
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    memset(handles[j], 0, MESH_ABI_HANDLE_MAXSIZE);
    net_listen(handles[j], &lc[j]);
    snprintf(path, sizeof(path), "%s/handle.%d.%d", dir, rank, j);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(handles[j], 1, MESH_ABI_HANDLE_MAXSIZE, f) != MESH_ABI_HANDLE_MAXSIZE || fclose(f) != 0)
      die("writing %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die("rename %s: %s", path, strerror(errno));
  }
  double t0 = now();
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    snprintf(path, sizeof(path), "%s/handle.%d.%d", dir, j, rank);
    for (;;) {
      FILE *f = fopen(path, "rb");
      if (f) {
        size_t n = fread(peer_handles[j], 1, MESH_ABI_HANDLE_MAXSIZE, f);
        fclose(f);
        if (n == MESH_ABI_HANDLE_MAXSIZE) break;
      }
      if (now() - t0 > 120) die("no handle from rank %d in %s", j, dir);
      usleep(10000);
    }
  }
  /* Connect and accept without blocking: every call returns at once; NCCL calls again. */
  long calls = 0;
  for (;;) {
    int pending = 0;
    for (int j = 0; j < nranks; j++) {
      if (j == rank) continue;
      if (!sc[j]) net_connect(peer_handles[j], &sc[j]);
      if (!rc[j]) net_accept(lc[j], &rc[j]);
      pending += !sc[j] + !rc[j];
      calls++;
    }
    if (!pending) break;
    if (now() - t0 > 120) die("connections incomplete after 120 s");
    usleep(100);
  }
  printf("rank %d: connected to %d peers (%ld connect/accept rounds, %.3f s)\n", rank, nranks - 1, calls,
         now() - t0);

  static const size_t sizes[] = {0, 1, 3, 4096, 65535, 65537, 262147, 1 << 20, (4 << 20) + 5, 16 << 20, 64 << 20};
  const char *stream_s = getenv("FUNC_STREAM_S");
  if (stream_s) return stream(atof(stream_s), max_bytes, sc, rc, lc);
  size_t room = max_bytes + 64;
  unsigned char *sbuf[MAXR], *rbuf[MAXR];
  void *smh[MAXR], *rmh[MAXR];
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    sbuf[j] = malloc(room);
    rbuf[j] = malloc(room);
    if (!sbuf[j] || !rbuf[j]) die("out of memory");
    net_reg(sc[j], sbuf[j], room, &smh[j]);
    net_reg(rc[j], rbuf[j], room, &rmh[j]);
  }
  int nsizes = 0;
  double bytes_total = 0, t_data = now();
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t size = sizes[k];
    if (size > max_bytes) continue;
    nsizes++;
    void *sreq[MAXR] = {0}, *rreq[MAXR] = {0};
    int sdone[MAXR] = {0}, rdone[MAXR] = {0}, rsize[MAXR] = {0};
    for (int j = 0; j < nranks; j++) {
      if (j == rank) continue;
      for (size_t i = 0; i < size; i++) sbuf[j][i] = pattern(rank, j, size, i);
      memset(rbuf[j], 0xEE, size + 64);
      /* The receive buffer is larger than the message: the size reported must be the message's. */
      while (!rreq[j]) net_irecv(rc[j], rbuf[j], size + 64, rmh[j], &rreq[j]);
      while (!sreq[j]) net_isend(sc[j], sbuf[j], size, smh[j], &sreq[j]);
    }
    double ts = now();
    while (test_pass(sreq, rreq, sdone, rdone, rsize))
      if (now() - ts > 120) die("size %zu: requests incomplete after 120 s", size);
    for (int j = 0; j < nranks; j++) {
      if (j == rank) continue;
      if ((size_t)rsize[j] != size) die("size %zu from rank %d: test reported %d bytes", size, j, rsize[j]);
      for (size_t i = 0; i < size; i++)
        if (rbuf[j][i] != pattern(j, rank, size, i)) die("size %zu from rank %d: byte %zu differs", size, j, i);
      for (size_t i = size; i < size + 64; i++)
        if (rbuf[j][i] != 0xEE) die("size %zu from rank %d: byte %zu past the message was written", size, j, i);
      bytes_total += (double)size;
    }
  }
  double dt = now() - t_data;
  for (int j = 0; j < nranks; j++) {
    if (j == rank) continue;
    if (version == 11) {
      CALL(n11->deregMr(sc[j], smh[j]));
      CALL(n11->deregMr(rc[j], rmh[j]));
    }
    net_close(sc[j], rc[j], lc[j]);
    free(sbuf[j]);
    free(rbuf[j]);
  }
  if (version == 11) CALL(n11->finalize(ctx));
  printf("rank %d: OK abi v%d, %d sizes x %d peers checked, %.1f MB received in %.2f s\n", rank, version, nsizes,
         nranks - 1, bytes_total / 1e6, dt);
  return 0;
}
