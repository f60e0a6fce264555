/* SPDX-License-Identifier: GPL-3.0-or-later
 * test_cable.c: unit tests of a lost cable (cable.c, the watch in tcp.c and verbs.c): interface states from
 * fake sysfs trees in the kernel's formats, the cable's name, the keepalive plan, the stall rule, TCP_INFO's
 * signs; TCP comms over loopback whose "cable" is a fake interface taken down (the error names it, after the
 * bound and not before), a receiver that leaves its window closed longer than the bound (not a lost cable);
 * and whole-plugin scenarios: TCP through the v11 table, verbs over the fake with the port going DOWN.
 * The real thing, veth cables set down, deleted or silenced under a live transfer: run_cable.sh.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "fake_verbs.h"
#include "harness.h"
#include "mesh.h"

/* ---------- interface states ---------- */
static void iface(const char *name, const char *flags, const char *operstate, const char *carrier) {
  char rel[256];
  snprintf(rel, sizeof(rel), "class/net/%s/flags", name);
  put_file(rel, flags);
  snprintf(rel, sizeof(rel), "class/net/%s/operstate", name);
  put_file(rel, operstate);
  snprintf(rel, sizeof(rel), "class/net/%s/carrier", name);
  if (carrier) {
    put_file(rel, carrier);
  } else { /* the kernel answers EINVAL to a read of carrier while the interface is down */
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", tree, rel);
    unlink(path);
  }
}

static void rm_rf(const char *path) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
  CHECK(system(cmd) == 0, "%s", cmd);
}

static void iface_gone(const char *name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/class/net/%s", tree, name);
  rm_rf(path);
}

static void test_link_state(void) {
  CHECK(mesh_link_classify(0, NULL, NULL, NULL) == MESH_LINK_GONE, "no directory: gone");
  CHECK(mesh_link_classify(1, NULL, NULL, NULL) == MESH_LINK_UNKNOWN, "nothing readable: unknown");
  CHECK(mesh_link_classify(1, "0x1003", "up", "1") == MESH_LINK_UP, "up");
  CHECK(mesh_link_classify(1, "0x9", "unknown", "1") == MESH_LINK_UP, "lo reports unknown: up");
  CHECK(mesh_link_classify(1, "0x1002", "down", NULL) == MESH_LINK_ADMIN_DOWN, "set down (IFF_UP clear)");
  CHECK(mesh_link_classify(1, NULL, "down", NULL) == MESH_LINK_ADMIN_DOWN, "no flags, down, carrier unreadable");
  CHECK(mesh_link_classify(1, "0x1003", "down", "0") == MESH_LINK_NO_CARRIER, "a veth whose peer is down");
  CHECK(mesh_link_classify(1, "0x1003", "lowerlayerdown", NULL) == MESH_LINK_NO_CARRIER, "lower layer down");
  CHECK(mesh_link_classify(1, "0x1003", "up", "0") == MESH_LINK_NO_CARRIER, "carrier 0 wins over operstate");
  new_tree();
  iface("data1", "0x1003\n", "up\n", "1\n");
  CHECK(mesh_link_state(tree, "data1") == MESH_LINK_UP, "data1 up");
  CHECK(mesh_link_state(tree, "data1:1") == MESH_LINK_UP, "an address label reads its interface");
  CHECK(mesh_link_state(tree, "data9") == MESH_LINK_GONE, "no such interface");
  iface("data1", "0x1002\n", "down\n", NULL);
  CHECK(mesh_link_state(tree, "data1") == MESH_LINK_ADMIN_DOWN, "data1 set down");
  iface("data1", "0x1003\n", "down\n", "0\n");
  CHECK(mesh_link_state(tree, "data1") == MESH_LINK_NO_CARRIER, "data1 without carrier");
  CHECK(strstr(mesh_link_state_text(MESH_LINK_NO_CARRIER), "no carrier") != NULL, "text");
  CHECK(strstr(mesh_link_state_text(MESH_LINK_ADMIN_DOWN), "set down") != NULL, "text");
  CHECK(strstr(mesh_link_state_text(MESH_LINK_GONE), "gone") != NULL, "text");
  rm_rf(tree);
}

static struct mesh_route route(const char *ifname, const char *local, const char *peer, int via_node) {
  struct mesh_route r;
  memset(&r, 0, sizeof(r));
  r.local = local ? ip(local) : 0;
  r.peer = ip(peer);
  r.prefix = via_node ? -1 : 30;
  r.via_node = via_node;
  snprintf(r.ifname, sizeof(r.ifname), "%s", ifname);
  return r;
}

/* NCCL_MESH_CABLE_TIMEOUT_MS: 10 s unless set, 0 turns the watch off, under 1 s refused by name. */
static void test_setting(void) {
  struct mesh_config cfg;
  char err[MESH_ERRLEN] = "";
  unsetenv("NCCL_MESH_CABLE_TIMEOUT_MS");
  CHECK(mesh_config_load(&cfg, err, sizeof(err)) == 0 && cfg.cable_timeout_ms == 10000, "default: %s", err);
  static const char *const ok[] = {"0", "1000", "3600000"};
  for (int i = 0; i < 3; i++) {
    setenv("NCCL_MESH_CABLE_TIMEOUT_MS", ok[i], 1);
    CHECK(mesh_config_load(&cfg, err, sizeof(err)) == 0 && cfg.cable_timeout_ms == atoi(ok[i]), "%s: %s", ok[i], err);
  }
  setenv("NCCL_MESH_CABLE_TIMEOUT_MS", "500", 1);
  CHECK(mesh_config_load(&cfg, err, sizeof(err)) != 0 &&
            strcmp(err, "NCCL_MESH_CABLE_TIMEOUT_MS=500: expected 0 (never) or 1000..3600000") == 0,
        "%s", err);
  setenv("NCCL_MESH_CABLE_TIMEOUT_MS", "3600001", 1);
  CHECK(mesh_config_load(&cfg, err, sizeof(err)) != 0 && strstr(err, "NCCL_MESH_CABLE_TIMEOUT_MS=3600001: expected"),
        "%s", err);
  setenv("NCCL_MESH_CABLE_TIMEOUT_MS", "10s", 1);
  CHECK(mesh_config_load(&cfg, err, sizeof(err)) != 0 && strstr(err, "NCCL_MESH_CABLE_TIMEOUT_MS=10s: expected"),
        "%s", err);
  unsetenv("NCCL_MESH_CABLE_TIMEOUT_MS");
}

static void test_names_and_plans(void) {
  char s[MESH_ERRLEN];
  struct mesh_route r = route("data1", "192.168.100.5", "192.168.100.6", 0);
  mesh_cable_name(&r, s, sizeof(s));
  CHECK(strcmp(s, "cable data1 (192.168.100.5 -> 192.168.100.6)") == 0, "%s", s);
  r = route("", "10.255.0.1", "10.255.0.3", 1);
  mesh_cable_name(&r, s, sizeof(s));
  CHECK(strcmp(s, "the routed path 10.255.0.1 -> 10.255.0.3 (node addresses)") == 0, "%s", s);
  r = route("", NULL, "10.255.0.3", 1);
  mesh_cable_name(&r, s, sizeof(s));
  CHECK(strcmp(s, "the routed path this node -> 10.255.0.3 (node addresses)") == 0, "%s", s);

  int idle, intvl, cnt;
  mesh_keepalive_plan(10000, &idle, &intvl, &cnt);
  CHECK(idle == 6 && intvl == 2 && cnt == 3, "default: %d + %d x %d", idle, cnt, intvl);
  mesh_keepalive_plan(1000, &idle, &intvl, &cnt);
  CHECK(idle == 2 && intvl == 1 && cnt == 1, "1 s: %d + %d x %d", idle, cnt, intvl);
  int ok = 1;
  for (int t = 1000; t <= 3600000; t += t < 20000 ? 1 : 997) {
    mesh_keepalive_plan(t, &idle, &intvl, &cnt);
    ok &= idle >= 1 && intvl >= 1 && cnt >= 1 && idle + cnt * intvl == (t + 999) / 1000 + 2;
  }
  CHECK(ok, "every bound: idle + cnt x intvl = the bound in whole seconds + 2, each >= 1");
  int fd = socket(AF_INET, SOCK_STREAM, 0), v[4] = {0};
  socklen_t sl = sizeof(int);
  CHECK(mesh_keepalive_set(fd, 10000) == 0, "keepalive set");
  getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v[0], &sl);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v[1], &sl);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v[2], &sl);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v[3], &sl);
  CHECK(v[0] == 1 && v[1] == 6 && v[2] == 2 && v[3] == 3, "the socket holds it: %d %d %d %d", v[0], v[1], v[2], v[3]);
  close(fd);

  struct mesh_stall st = {0, 0};
  CHECK(mesh_stall_update(&st, 0, 100) == 0, "not stalled");
  CHECK(mesh_stall_update(&st, 1, 0) == 0, "stalled from now (time 0 is a time like any other)");
  CHECK(mesh_stall_update(&st, 1, 2500) == 2500, "held 2.5 s");
  CHECK(mesh_stall_update(&st, 0, 2600) == 0 && mesh_stall_update(&st, 1, 3000) == 0, "a break starts it over");
  CHECK(mesh_stall_update(&st, 1, 3999) == 999, "held 0.999 s");

  CHECK(!mesh_ack_silent(0, 0, 0), "idle");
  CHECK(!mesh_ack_silent(0, 0, 7), "data in flight, no timeout yet");
  CHECK(mesh_ack_silent(1, 0, 7), "retransmitting unacknowledged data");
  CHECK(!mesh_ack_silent(1, 0, 0), "nothing unacknowledged");
  CHECK(!mesh_ack_silent(0, 1, 0), "a window probe out: a live peer answers it");
  CHECK(mesh_ack_silent(0, 2, 0), "two window probes unanswered");
}

/* ---------- a loopback connection whose "cable" is a fake interface ---------- */
static int pair(int nsocks, int *sfds, int *rfds) {
  char err[MESH_ERRLEN];
  struct mesh_acceptor a;
  struct mesh_connector c;
  struct mesh_route r = route("lo", "127.0.0.1", "127.0.0.1", 0);
  if (mesh_acceptor_open(&a, 5, err, sizeof(err)) != 0 ||
      mesh_connector_start(&c, &r, 1, a.port, 5, nsocks, 5000, err, sizeof(err)) != 0)
    return -1;
  int cd = 0, ad = 0, n = 0;
  double t0 = now();
  while ((!cd || !ad) && now() - t0 < 5 && cd >= 0 && ad >= 0) {
    if (!cd) cd = mesh_connector_progress(&c, err, sizeof(err));
    if (!ad) ad = mesh_acceptor_progress(&a, err, sizeof(err));
  }
  mesh_acceptor_take(&a, rfds, &n);
  for (int i = 0; i < nsocks; i++) sfds[i] = c.fds[i];
  mesh_acceptor_close(&a);
  return cd == 1 && n == nsocks ? 0 : -1;
}

/* Tests r until it is done or fails or `seconds` pass: 1 done, -1 failed (err), 0 still waiting. */
static int wait_for(struct mesh_tcp_request *r, double seconds, size_t *size, char *err, size_t errlen) {
  int done = 0;
  double t0 = now();
  while (now() - t0 < seconds) {
    if (mesh_tcp_test(r, &done, size, err, errlen) != 0) return -1;
    if (done) return 1;
    usleep(1000);
  }
  return 0;
}

static void test_sock_watch(void) {
  int sfd, rfd;
  char why[MESH_ERRLEN];
  CHECK(pair(1, &sfd, &rfd) == 0, "pair");
  new_tree();
  iface("data1", "0x1003\n", "up\n", "1\n");
  struct mesh_route r = route("data1", "127.0.0.1", "127.0.0.1", 0);
  struct mesh_sock_watch w;
  mesh_sock_watch_start(&w, &r, tree);
  CHECK(w.link_watched, "an interface seen at the start is watched");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1, why, sizeof(why)) == 0, "up: %s", why);
  iface("data1", "0x1003\n", "down\n", "0\n");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 100, why, sizeof(why)) == 0, "down, just now");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1099, why, sizeof(why)) == 0, "down 0.999 s");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1100, why, sizeof(why)) == 1 &&
            strcmp(why, "cable data1 (127.0.0.1 -> 127.0.0.1) lost: no carrier (the far end is down or the cable is "
                        "out) for 1.0 s") == 0,
        "down 1 s: %s", why);
  iface("data1", "0x1003\n", "up\n", "1\n");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1200, why, sizeof(why)) == 0, "back up: starts over");
  iface_gone("data1");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1300, why, sizeof(why)) == 0, "gone, just now");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 2400, why, sizeof(why)) == 1 &&
            strstr(why, "cable data1 (127.0.0.1 -> 127.0.0.1) lost: the interface is gone for 1.1 s"),
        "gone: %s", why);
  /* not visible at the start (another namespace's sysfs): never called gone */
  mesh_sock_watch_start(&w, &r, tree);
  CHECK(!w.link_watched, "an interface not seen at the start is not watched");
  CHECK(mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 1, why, sizeof(why)) == 0 &&
            mesh_sock_watch_check(&w, sfd, &r, tree, 1000, 60000, why, sizeof(why)) == 0,
        "unwatched: %s", why);
  struct mesh_route node = route("", "127.0.0.1", "127.0.0.1", 1);
  iface("data1", "0x1003\n", "down\n", "0\n");
  mesh_sock_watch_start(&w, &node, tree);
  CHECK(!w.link_watched, "a node route has no one cable: the kernel may route it over another");
  close(sfd);
  close(rfd);
  rm_rf(tree);
}

static struct mesh_cable_opts opts_1s(void) {
  struct mesh_cable_opts o = {1000, tree};
  return o;
}

static void test_tcp_cable_lost(void) {
  int sfds[2], rfds[2];
  char err[MESH_ERRLEN];
  CHECK(pair(2, sfds, rfds) == 0, "pair");
  new_tree();
  iface("data1", "0x1003\n", "up\n", "1\n");
  struct mesh_route one = route("data1", "127.0.0.1", "127.0.0.1", 0), routes[2] = {one, one};
  struct mesh_cable_opts o = opts_1s();
  struct mesh_tcp_comm *s = mesh_tcp_comm_create(1, sfds, routes, 2, "peer 127.0.0.1, NIC data1", &o, err, sizeof(err));
  struct mesh_tcp_comm *r = mesh_tcp_comm_create(0, rfds, routes, 2, "peer 127.0.0.1, NIC data1", &o, err, sizeof(err));
  CHECK(s && r, "comms: %s", err);
  if (!s || !r) return;
  /* A receive that waits 1.3 s for a peer that sends nothing, the cable up: a slow peer, not a lost cable. */
  char small[64];
  struct mesh_tcp_request *rr = NULL, *sr = NULL;
  size_t size = 0;
  mesh_tcp_post(r, small, sizeof(small), 0, &rr);
  CHECK(rr && wait_for(rr, 1.3, &size, err, sizeof(err)) == 0, "a slow peer is not a lost cable: %s", err);
  /* A receiver that leaves its window closed for 1.6 s: the sender waits (TCP_USER_TIMEOUT would end it). */
  size_t big = (size_t)64 << 20;
  unsigned char *out = malloc(big), *in = malloc(big);
  for (size_t i = 0; i < big; i++) out[i] = (unsigned char)(i * 31 + (i >> 16));
  mesh_tcp_post(s, small, 10, 0, &sr);
  CHECK(sr && wait_for(sr, 1, &size, err, sizeof(err)) == 1, "10 bytes sent: %s", err);
  CHECK(wait_for(rr, 1, &size, err, sizeof(err)) == 1 && size == 10, "10 bytes received: %s", err);
  mesh_tcp_post(s, out, big, 0, &sr);
  CHECK(sr && wait_for(sr, 1.6, &size, err, sizeof(err)) == 0, "64 MiB to a receiver that reads nothing: waits: %s",
        err);
  mesh_tcp_post(r, in, big, 0, &rr);
  CHECK(rr && wait_for(rr, 10, &size, err, sizeof(err)) == 1 && size == big && memcmp(in, out, big) == 0,
        "then it arrives whole: %s", err);
  CHECK(wait_for(sr, 5, &size, err, sizeof(err)) == 1, "and the send completes: %s", err);
  /* The cable loses its carrier while a receive waits: the error names it, after the bound and not before. */
  mesh_tcp_post(r, small, sizeof(small), 0, &rr);
  double t0 = now();
  iface("data1", "0x1003\n", "down\n", "0\n");
  int got = wait_for(rr, 5, &size, err, sizeof(err));
  double dt = now() - t0;
  CHECK(got == -1 && strstr(err, "receive: cable data1 (127.0.0.1 -> 127.0.0.1) lost: no carrier") &&
            strstr(err, " s, seen on socket 0 of 2 (peer 127.0.0.1, NIC data1)"),
        "the receive fails naming the cable: %s", err);
  CHECK(dt >= 0.99 && dt < 2, "after the bound of 1 s (and a look every 0.2 s): %.2f s", dt);
  struct mesh_tcp_request *later = NULL;
  CHECK(mesh_tcp_post(r, small, sizeof(small), 0, &later) == -1, "a broken comm refuses new requests");
  mesh_tcp_comm_error(r, err, sizeof(err));
  CHECK(strstr(err, "cable data1 (127.0.0.1 -> 127.0.0.1) lost") != NULL, "and says why: %s", err);
  mesh_tcp_comm_error(s, err, sizeof(err));
  CHECK(strcmp(err, "no error") == 0, "the sending comm is whole: %s", err);
  mesh_tcp_comm_destroy(s);
  mesh_tcp_comm_destroy(r);
  free(out);
  free(in);
  rm_rf(tree);
}

/* ---------- whole-plugin scenarios ---------- */
static void scenario_tcp_cable_lost(void) {
  new_tree();
  iface("lo", "0x9\n", "unknown\n", "1\n");
  setenv("NCCL_MESH_SYSFS_ROOT", tree, 1);
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  setenv("NCCL_MESH_CABLE_TIMEOUT_MS", "1000", 1);
  CHECK(P->init(&ctx, 1, NULL, logger, NULL) == MESH_ABI_SUCCESS, "init: %s", warnings);
  CHECK(strstr(infos, "a cable lost for 1000 ms ends its connections") != NULL, "%s", infos);
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(sc && rc, "connected: %s", warnings);
  if (!sc || !rc) return;
  char err[128] = "", buf[64];
  CHECK(exchange(sc, rc, 4096, 8192, err) == 0, "4 KiB: %s", err);
  void *mh = NULL, *req = NULL;
  P->regMr(rc, buf, sizeof(buf), MESH_ABI_PTR_HOST, &mh);
  void *data[1] = {buf};
  size_t sizes[1] = {sizeof(buf)};
  int tags[1] = {0}, done = 0, got = 0;
  CHECK(P->irecv(rc, 1, data, sizes, tags, &mh, NULL, &req) == MESH_ABI_SUCCESS && req, "irecv");
  iface("lo", "0x8\n", "down\n", NULL);
  warnings[0] = '\0';
  mesh_abi_result_t res = MESH_ABI_SUCCESS;
  double t0 = now();
  while (res == MESH_ABI_SUCCESS && !done && now() - t0 < 5) res = P->test(req, &done, &got);
  CHECK(res == MESH_ABI_REMOTE_ERROR && now() - t0 >= 0.99 && now() - t0 < 2, "ncclRemoteError after %.2f s",
        now() - t0);
  CHECK(strstr(warnings, "test: receive: cable lo (127.0.0.1 -> 127.0.0.1) lost: the interface is set down for 1."),
        "%s", warnings);
  CHECK(P->irecv(rc, 1, data, sizes, tags, &mh, NULL, &req) == MESH_ABI_SYSTEM_ERROR &&
            strstr(warnings, "irecv of 64 bytes: the connection failed before: receive: cable lo"),
        "%s", warnings);
  P->deregMr(rc, mh);
  CHECK(P->closeSend(sc) == 0 && P->closeRecv(rc) == 0 && P->closeListen(lc) == 0, "close");
  rm_rf(tree);
}

static void scenario_verbs_cable_lost(void) {
  setenv("NCCL_MESH_CABLE_TIMEOUT_MS", "1000", 1);
  CHECK(init_fake_verbs(FAKE_OK) == MESH_ABI_SUCCESS, "init: %s", warnings);
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(sc && rc, "connected: %s", warnings);
  if (!sc || !rc) return;
  char err[128] = "";
  CHECK(exchange(sc, rc, 1000, 2000, err) == 0, "1000 bytes: %s", err);
  static char rbuf[256], sbuf[256];
  void *rmh = NULL, *smh = NULL, *rreq = NULL, *sreq = NULL;
  P->regMr(rc, rbuf, sizeof(rbuf), MESH_ABI_PTR_HOST, &rmh);
  P->regMr(sc, sbuf, sizeof(sbuf), MESH_ABI_PTR_HOST, &smh);
  void *data[1] = {rbuf};
  size_t sizes[1] = {sizeof(rbuf)};
  int tags[1] = {0}, done = 0, got = 0;
  /* A receive that waits 1.25 s with the port ACTIVE: a slow peer, not a lost cable. */
  CHECK(P->irecv(rc, 1, data, sizes, tags, &rmh, NULL, &rreq) == MESH_ABI_SUCCESS && rreq, "irecv");
  mesh_abi_result_t res = MESH_ABI_SUCCESS;
  double t0 = now();
  while (res == MESH_ABI_SUCCESS && now() - t0 < 1.25) res = P->test(rreq, &done, &got);
  CHECK(res == MESH_ABI_SUCCESS && !done, "still waiting, no error: %d", res);
  /* The port goes DOWN: the waiting receive ends after the bound, naming the cable and the port. */
  fake_verbs_link(0);
  warnings[0] = '\0';
  t0 = now();
  while (res == MESH_ABI_SUCCESS && !done && now() - t0 < 5) res = P->test(rreq, &done, &got);
  double dt = now() - t0;
  CHECK(res == MESH_ABI_REMOTE_ERROR && dt >= 0.99 && dt < 2, "ncclRemoteError after %.2f s", dt);
  CHECK(strstr(warnings, "receive of 256 bytes: cable lo (127.0.0.1 -> 127.0.0.1) lost: RDMA port fake0:1 is DOWN "
                         "for 1.") &&
            strstr(warnings, " s (peer 127.0.0.1, NIC fake0:1"),
        "%s", warnings);
  /* A send's retries run out: its completion's error says what the port is. */
  warnings[0] = '\0';
  CHECK(P->isend(sc, sbuf, 100, 0, smh, NULL, &sreq) == MESH_ABI_SUCCESS && sreq, "isend");
  res = MESH_ABI_SUCCESS;
  done = 0;
  t0 = now();
  while (res == MESH_ABI_SUCCESS && !done && now() - t0 < 5) res = P->test(sreq, &done, &got);
  CHECK(res == MESH_ABI_REMOTE_ERROR && strstr(warnings, "transport retry counter exceeded") &&
            strstr(warnings, "; cable lo (127.0.0.1 -> 127.0.0.1) lost: RDMA port fake0:1 is DOWN (peer 127.0.0.1"),
        "%s", warnings);
  P->deregMr(rc, rmh);
  P->deregMr(sc, smh);
  P->closeSend(sc);
  P->closeRecv(rc);
  P->closeListen(lc);
  CHECK(fake_rec.qps_alive == 0 && fake_rec.cqs_alive == 0 && fake_rec.mrs_alive == 0, "every verbs object released");
  rm_rf(tree);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  test_link_state();
  test_setting();
  test_names_and_plans();
  test_sock_watch();
  printf("cable: %d checks, %d failed\n", checks, failures);
  /* most of their time is waiting out a bound: at once */
  static const char *const names[] = {"tcp comm: cable lost", "tcp: cable set down", "verbs: port DOWN"};
  static void (*const fns[])(void) = {test_tcp_cable_lost, scenario_tcp_cable_lost, scenario_verbs_cable_lost};
  run_scenarios(3, names, fns);
  return finish();
}
