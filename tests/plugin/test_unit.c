/* SPDX-License-Identifier: GPL-3.0-or-later
 * test_unit.c: unit tests of the Mesh plugin, linked with its sources and the fake verbs.
 * Pure pieces run in this process; whole-plugin scenarios (the plugin keeps process-wide state from
 * init) each run in a child process.  Exit status 0 only when every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_verbs.h"
#include "harness.h"
#include "mesh.h"

/* ---------- subnets ---------- */
static void test_subnet(void) {
  uint32_t a;
  CHECK(mesh_ipv4_parse("192.168.100.1", &a) == 0 && a == 0xc0a86401u, "parse");
  CHECK(mesh_ipv4_parse("192.168.100", &a) != 0, "parse rejects a short address");
  CHECK(mesh_subnet_contains(ip("10.0.0.1"), 30, ip("10.0.0.2")), "/30 holds its peer");
  CHECK(!mesh_subnet_contains(ip("10.0.0.1"), 30, ip("10.0.0.5")), "/30 stops at .3");
  CHECK(mesh_subnet_contains(ip("10.0.0.1"), 0, ip("172.16.0.1")), "/0 holds everything");
  CHECK(!mesh_subnet_contains(ip("10.0.0.1"), 33, ip("10.0.0.1")), "bad prefix");
  char s[64];
  mesh_subnet_str(ip("192.168.101.3"), 24, s, sizeof(s));
  CHECK(strcmp(s, "192.168.101.0/24") == 0, "%s", s);

  struct mesh_ifaddr locals[] = {
      {"eth0", ip("10.99.0.10"), 24}, {"enp1", ip("192.168.100.1"), 30}, {"enp2", ip("192.168.101.1"), 30}};
  uint32_t peers[] = {ip("10.255.0.3"), ip("192.168.101.2"), ip("10.99.0.12")};
  int li = -1, pi = -1;
  CHECK(mesh_choose_rails(locals, 3, peers, 3, &li, &pi, 16) == 1 && li == 2 && pi == 1,
        "longest prefix wins over the management /24: li=%d pi=%d", li, pi);
  uint32_t only_mgmt[] = {ip("10.99.0.12")};
  CHECK(mesh_choose_rails(locals, 3, only_mgmt, 1, &li, &pi, 16) == 1 && li == 0, "management when nothing else");
  uint32_t none[] = {ip("172.16.5.5")};
  CHECK(mesh_choose_rails(locals, 3, none, 1, &li, &pi, 16) == 0, "no subnet holds the peer");
  CHECK(mesh_addr_is_local(ip("127.0.0.1")) && !mesh_addr_is_local(ip("198.51.100.77")), "local addresses by bind");
  CHECK(mesh_if_prefix_of(locals, 3, ip("192.168.100.1")) == 30, "prefix of a local address");
  CHECK(mesh_if_prefix_of(locals, 3, ip("192.168.100.2")) == -1, "not a local address");

  CHECK(!mesh_ifname_matches("", "lo", 1), "loopback left out by default");
  CHECK(mesh_ifname_matches("", "enp1", 0), "everything else in by default");
  CHECK(mesh_ifname_matches("lo", "lo", 1), "loopback when named");
  CHECK(mesh_ifname_matches("enp,ib", "ib0", 0) && !mesh_ifname_matches("enp,ib", "eth0", 0), "prefix list");
  CHECK(mesh_ifname_matches("=eth0", "eth0", 0) && !mesh_ifname_matches("=eth0", "eth01", 0), "exact");
  CHECK(!mesh_ifname_matches("^eth", "eth0", 0) && mesh_ifname_matches("^eth", "enp1", 0), "exclusion");
}

/* ---------- handle ---------- */
static void test_handle(void) {
  struct mesh_handle h, g;
  char err[MESH_ERRLEN];
  uint8_t buf[MESH_ABI_HANDLE_MAXSIZE];
  memset(&h, 0, sizeof(h));
  h.backend = MESH_BACKEND_VERBS;
  h.nsocks = 4;
  h.port = 61234;
  h.nonce = 0x0123456789abcdefULL;
  h.node_addr = ip("10.255.0.7");
  h.naddrs = MESH_HANDLE_MAX_ADDRS;
  for (int i = 0; i < MESH_HANDLE_MAX_ADDRS; i++) {
    h.addrs[i] = ip("192.168.100.1") + (uint32_t)(4 * i);
    h.prefixes[i] = (uint8_t)(30 - (i % 3));
  }
  memset(buf, 0xAB, sizeof(buf));
  CHECK(mesh_handle_pack(&h, buf, sizeof(buf), err, sizeof(err)) == 0, "%s", err);
  int zero_tail = 1;
  for (int i = MESH_HANDLE_WIRE_BYTES; i < MESH_ABI_HANDLE_MAXSIZE; i++) zero_tail &= buf[i] == 0;
  CHECK(zero_tail, "bytes after the wire layout are zero (the connector's state starts empty)");
  CHECK(MESH_HANDLE_STATE_OFFSET + sizeof(void *) <= MESH_ABI_HANDLE_MAXSIZE, "state pointer within 128 bytes");
  CHECK(mesh_handle_unpack(buf, sizeof(buf), &g, err, sizeof(err)) == 0, "%s", err);
  CHECK(g.backend == h.backend && g.nsocks == 4 && g.port == 61234 && g.nonce == h.nonce && g.naddrs == 16,
        "fields round-trip");
  CHECK(memcmp(g.addrs, h.addrs, sizeof(h.addrs)) == 0 && memcmp(g.prefixes, h.prefixes, 16) == 0, "addresses");
  CHECK(g.node_addr == ip("10.255.0.7") && buf[100] == 10 && buf[101] == 255 && buf[103] == 7, "node address at 100");
  buf[4] = 1;
  CHECK(mesh_handle_unpack(buf, sizeof(buf), &g, err, sizeof(err)) != 0 && strstr(err, "handle version 1, this one 2"),
        "an older build's handle is named: %s", err);
  buf[4] = 2;
  CHECK(buf[20] == 192 && buf[21] == 168 && buf[22] == 100 && buf[23] == 1, "addresses big-endian on the wire");
  h.naddrs = 0;
  CHECK(mesh_handle_pack(&h, buf, sizeof(buf), err, sizeof(err)) != 0 && strstr(err, "addresses"), "%s", err);
  h.naddrs = MESH_HANDLE_MAX_ADDRS + 1;
  CHECK(mesh_handle_pack(&h, buf, sizeof(buf), err, sizeof(err)) != 0, "17 addresses do not fit");
  h.naddrs = 1;
  CHECK(mesh_handle_pack(&h, buf, 64, err, sizeof(err)) != 0 && strstr(err, "128"), "%s", err);
  h.nsocks = 0;
  CHECK(mesh_handle_pack(&h, buf, sizeof(buf), err, sizeof(err)) != 0, "0 sockets");
  h.nsocks = 1;
  CHECK(mesh_handle_pack(&h, buf, sizeof(buf), err, sizeof(err)) == 0, "%s", err);
  buf[84] = 33;
  CHECK(mesh_handle_unpack(buf, sizeof(buf), &g, err, sizeof(err)) != 0 && strstr(err, "/33"), "%s", err);
  buf[0] = 'X';
  CHECK(mesh_handle_unpack(buf, sizeof(buf), &g, err, sizeof(err)) != 0 && strstr(err, "NCCL_NET_PLUGIN"), "%s", err);
}

/* ---------- TCP slices ---------- */
static void test_slices(void) {
  static const size_t sizes[] = {0, 1, 100, 65535, 65536, 65537, 131072, 262145, 1000003, 4194304, 67108867};
  int ok = 1;
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    for (int n = 1; n <= MESH_MAX_SOCKS; n++) {
      size_t next = 0, used = 0;
      for (int j = 0; j < n; j++) {
        size_t off, len;
        mesh_tcp_slice(sizes[k], n, j, &off, &len);
        if (len == 0) continue;
        used++;
        if (off != next) ok = 0;
        next = off + len;
        if (len < MESH_TCP_MIN_SLICE && next != sizes[k]) ok = 0; /* only the last slice may be short */
      }
      if (next != sizes[k]) ok = 0;
      if (sizes[k] <= MESH_TCP_MIN_SLICE && sizes[k] > 0 && used != 1) ok = 0;
    }
  }
  CHECK(ok, "slices cover every message exactly, in order, none short but the last");
}

/* ---------- fake sysfs trees ---------- */
static void make_tree(void) {
  new_tree();
  roce_port("mlx5_0", "0000:0000:0000:0000:0000:ffff:c0a8:6401\n", "enp1s0f0\n");
  gid("mlx5_0", 4, ZERO, NULL, NULL); /* an empty slot: the kernel refuses to read its type */
  port_files("mlx5_1", "Ethernet\n");
  gid("mlx5_1", 0, LL0, "IB/RoCE v1\n", "enp1s0f1\n");
  gid("mlx5_1", 1, LL0, "RoCE v2\n", "enp1s0f1\n");
  gid("mlx5_1", 3, "0000:0000:0000:0000:0000:ffff:c0a8:6501\n", "RoCE v2\n", "enp1s0f1\n");
  port_files("mlx5_2", "InfiniBand\n");
  gid("mlx5_2", 0, "fe80:0000:0000:0000:0002:c903:0001:0002\n", "IB/RoCE v1\n", NULL);
  port_files("mlx5_3", "Ethernet\n");
  gid("mlx5_3", 0, LL0, "IB/RoCE v1\n", "enp2s0\n");
  gid("mlx5_3", 1, LL0, "RoCE v2\n", "enp2s0\n");
}

static void test_gid(void) {
  uint8_t g[16];
  uint32_t a;
  CHECK(mesh_gid_parse("0000:0000:0000:0000:0000:ffff:c0a8:6401", g) == 0 && mesh_gid_ipv4(g, &a) == 0 &&
            a == ip("192.168.100.1"),
        "IPv4-mapped GID");
  CHECK(mesh_gid_parse("fe80:0000:0000:0000:0e42:a1ff:fe5a:3b2c", g) == 0 && mesh_gid_ipv4(g, &a) != 0,
        "link-local GID holds no IPv4");
  CHECK(mesh_gid_parse("not a gid", g) != 0, "garbage");

  struct mesh_ifaddr locals[] = {{"enp1s0f0", ip("192.168.100.1"), 30}, {"enp1s0f1", ip("192.168.101.1"), 30}};
  struct mesh_nic nics[MESH_MAX_NICS];
  char notes[2048];
  int n = mesh_nic_scan(tree, -1, locals, 2, nics, MESH_MAX_NICS, notes, sizeof(notes));
  CHECK(n == 2, "two RoCE v2 IPv4 GIDs, got %d (%s)", n, notes);
  if (n == 2) {
    CHECK(strcmp(nics[0].dev, "mlx5_0") == 0 && nics[0].gid_index == 3 && nics[0].addr == ip("192.168.100.1") &&
              nics[0].prefix == 30 && nics[0].speed_mbps == 100000 && strcmp(nics[0].netdev, "enp1s0f0") == 0 &&
              nics[0].active,
          "mlx5_0: GID 3 (RoCE v2), not 2 (RoCE v1): dev %s gid %d", nics[0].dev, nics[0].gid_index);
    CHECK(strcmp(nics[1].dev, "mlx5_1") == 0 && nics[1].gid_index == 3 && nics[1].addr == ip("192.168.101.1"),
          "mlx5_1");
    uint32_t peers[] = {ip("10.255.0.2"), ip("192.168.101.2")};
    int pi = -1, c = -1;
    CHECK(mesh_nic_rails(nics, n, peers, 2, &c, &pi, 4) == 1 && c == 1 && pi == 1,
          "the peer 192.168.101.2 is reached through mlx5_1 (got %d)", c);
    uint32_t far[] = {ip("192.168.102.2")};
    CHECK(mesh_nic_rails(nics, n, far, 1, &c, &pi, 4) == 0, "no NIC on the peer's subnet");
  }
  CHECK(strstr(notes, "mlx5_2:1 is not RoCE (link layer InfiniBand)") != NULL, "%s", notes);
  CHECK(strstr(notes, "mlx5_3:1 has no RoCE v2 GID with an IPv4 address") != NULL, "%s", notes);

  n = mesh_nic_scan(tree, 2, locals, 2, nics, MESH_MAX_NICS, notes, sizeof(notes));
  CHECK(n == 1 && nics[0].gid_index == 2 && strcmp(nics[0].dev, "mlx5_0") == 0, "forced GID index 2: %d", n);
  CHECK(strstr(notes, "mlx5_1:1 has no GID 2") != NULL, "%s", notes);
  n = mesh_nic_scan(tree, 1, locals, 2, nics, MESH_MAX_NICS, notes, sizeof(notes));
  CHECK(n == 0 && strstr(notes, "GID 1 of mlx5_0:1 (fe80:0000:0000:0000:0e42:a1ff:fe5a:3b2c) holds no IPv4") != NULL,
        "%s", notes);
  n = mesh_nic_scan("/nonexistent", -1, locals, 2, nics, MESH_MAX_NICS, notes, sizeof(notes));
  CHECK(n == 0 && strstr(notes, "no /nonexistent/class/infiniband"), "%s", notes);
}

/* ---------- connect/accept state machine ---------- */
static struct mesh_route lo_route(void) {
  struct mesh_route r;
  memset(&r, 0, sizeof(r));
  r.local = ip("127.0.0.1");
  r.peer = ip("127.0.0.1");
  r.prefix = 8;
  snprintf(r.ifname, sizeof(r.ifname), "lo");
  return r;
}

static int connect_pair(int nsocks, int *sfds, int *rfds) {
  char err[MESH_ERRLEN];
  struct mesh_acceptor a;
  struct mesh_connector c;
  if (mesh_acceptor_open(&a, 42, err, sizeof(err)) != 0) return -1;
  struct mesh_route r = lo_route();
  if (mesh_connector_start(&c, &r, 1, a.port, 42, nsocks, 5000, err, sizeof(err)) != 0) return -1;
  int cd = 0, ad = 0;
  double t0 = now();
  while ((!cd || !ad) && now() - t0 < 5) {
    if (!cd) cd = mesh_connector_progress(&c, err, sizeof(err));
    if (!ad) ad = mesh_acceptor_progress(&a, err, sizeof(err));
    if (cd < 0 || ad < 0) return -1;
  }
  int n = 0;
  mesh_acceptor_take(&a, rfds, &n);
  for (int i = 0; i < nsocks; i++) sfds[i] = c.fds[i];
  mesh_acceptor_close(&a);
  return n == nsocks ? 0 : -1;
}

static void test_sock(void) {
  char err[MESH_ERRLEN];
  struct mesh_acceptor a;
  struct mesh_connector c;
  CHECK(mesh_acceptor_open(&a, 7, err, sizeof(err)) == 0, "%s", err);
  /* A stray client that sends garbage must be dropped, not fail the listener. */
  int stray = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(a.port), .sin_addr.s_addr = htonl(ip("127.0.0.1"))};
  CHECK(connect(stray, (struct sockaddr *)&sa, sizeof(sa)) == 0, "stray connect");
  char junk[MESH_HELLO_BYTES];
  memset(junk, 'j', sizeof(junk));
  CHECK(send(stray, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk), "stray send");
  struct mesh_route r = lo_route();
  CHECK(mesh_connector_start(&c, &r, 1, a.port, 7, 3, 5000, err, sizeof(err)) == 0, "%s", err);
  /* Neither side blocks: every call returns at once, done or not. */
  double worst = 0;
  int cd = 0, ad = 0, calls = 0;
  double t0 = now();
  while ((!cd || !ad) && now() - t0 < 5) {
    double t = now();
    if (!cd) cd = mesh_connector_progress(&c, err, sizeof(err));
    if (!ad && calls > 3) ad = mesh_acceptor_progress(&a, err, sizeof(err)); /* the acceptor starts late */
    if (now() - t > worst) worst = now() - t;
    CHECK(cd >= 0 && ad >= 0, "%s", err);
    if (cd < 0 || ad < 0) break;
    calls++;
  }
  CHECK(cd == 1 && ad == 1, "both sides finished (%d, %d)", cd, ad);
  CHECK(worst < 0.05, "longest progress call %.3f s", worst);
  int fds[MESH_MAX_SOCKS], n = 0;
  mesh_acceptor_take(&a, fds, &n);
  CHECK(n == 3, "3 sockets, got %d", n);
  for (int i = 0; i < n; i++) {
    char b = (char)('a' + i), got = 0;
    CHECK(send(c.fds[i], &b, 1, 0) == 1, "send");
    mesh_set_blocking(fds[i], 1);
    CHECK(recv(fds[i], &got, 1, 0) == 1 && got == b, "socket %d arrives as index %d", i, i);
    close(fds[i]);
  }
  mesh_connector_abort(&c);
  /* A connector with another listener's nonce is ignored. */
  CHECK(mesh_connector_start(&c, &r, 1, a.port, 8, 1, 5000, err, sizeof(err)) == 0, "%s", err);
  for (int i = 0; i < 200; i++) {
    mesh_connector_progress(&c, err, sizeof(err));
    CHECK(mesh_acceptor_progress(&a, err, sizeof(err)) == 0, "wrong nonce must not complete or fail: %s", err);
    usleep(500);
  }
  mesh_connector_abort(&c);
  uint16_t dead_port = a.port;
  mesh_acceptor_close(&a);
  close(stray);
  /* Refused until the deadline: the error names the peer and the subnet. */
  CHECK(mesh_connector_start(&c, &r, 1, dead_port, 7, 2, 300, err, sizeof(err)) == 0, "%s", err);
  int rc = 0;
  t0 = now();
  while (rc == 0 && now() - t0 < 5) rc = mesh_connector_progress(&c, err, sizeof(err));
  CHECK(rc == -1 && strstr(err, "peer 127.0.0.1") && strstr(err, "subnet 127.0.0.0/8") && strstr(err, "attempts"),
        "refused: %s", err);
  CHECK(now() - t0 < 2, "gave up after its deadline");
  mesh_connector_abort(&c);
  CHECK(mesh_connector_start(&c, &r, 1, 1, 7, MESH_MAX_SOCKS + 1, 300, err, sizeof(err)) != 0, "too many sockets");
}

/* ---------- TCP data path ---------- */
static void test_tcp(void) {
  int sfds[MESH_MAX_SOCKS], rfds[MESH_MAX_SOCKS];
  char err[MESH_ERRLEN];
  CHECK(connect_pair(3, sfds, rfds) == 0, "pair");
  struct mesh_route routes[3] = {lo_route(), lo_route(), lo_route()};
  struct mesh_cable_opts opts = {10000, "/sys"};
  struct mesh_tcp_comm *s = mesh_tcp_comm_create(1, sfds, routes, 3, "peer 127.0.0.1, NIC lo", &opts, err, sizeof(err));
  struct mesh_tcp_comm *r = mesh_tcp_comm_create(0, rfds, routes, 3, "peer 127.0.0.1, NIC lo", &opts, err, sizeof(err));
  CHECK(s && r, "comms");
  size_t big = 3 * MESH_TCP_MIN_SLICE + 17;
  unsigned char *out = malloc(big), *in = malloc(big + 10);
  for (size_t i = 0; i < big; i++) out[i] = (unsigned char)(i * 7 + 3);
  static const size_t sizes[] = {0, 1, 5000, 3 * 65536 + 17};
  for (size_t k = 0; k < 4; k++) {
    struct mesh_tcp_request *sr = NULL, *rr = NULL;
    memset(in, 0, big + 10);
    mesh_tcp_post(r, in, big + 10, 0, &rr);
    mesh_tcp_post(s, out, sizes[k], 0, &sr);
    CHECK(sr && rr, "posted");
    int sd = 0, rd = 0;
    size_t ss = 0, rs = 0;
    double t0 = now();
    while ((!sd || !rd) && now() - t0 < 5) {
      if (!sd) mesh_tcp_test(sr, &sd, &ss, err, sizeof(err));
      if (!rd) mesh_tcp_test(rr, &rd, &rs, err, sizeof(err));
    }
    CHECK(sd && rd && ss == sizes[k] && rs == sizes[k], "size %zu: reported %zu/%zu", sizes[k], ss, rs);
    CHECK(memcmp(in, out, sizes[k]) == 0, "size %zu: data", sizes[k]);
  }
  /* The ring holds MESH_TCP_RING requests; the next one must wait (NULL request, no error). */
  struct mesh_tcp_request *q[MESH_TCP_RING + 1];
  int posted = 0;
  for (int i = 0; i <= MESH_TCP_RING; i++) {
    CHECK(mesh_tcp_post(s, out, 1, 0, &q[i]) == 0, "post %d", i);
    posted += q[i] != NULL;
  }
  CHECK(posted == MESH_TCP_RING && q[MESH_TCP_RING] == NULL, "ring full after %d", posted);
  /* Drain them on the receiver, then a message larger than the posted buffer fails, named. */
  for (int i = 0; i < MESH_TCP_RING; i++) {
    struct mesh_tcp_request *rr = NULL;
    mesh_tcp_post(r, in, 10, 0, &rr);
    int d = 0, d2 = 0;
    size_t z;
    while (!d) mesh_tcp_test(rr, &d, &z, err, sizeof(err));
    while (!d2) mesh_tcp_test(q[i], &d2, &z, err, sizeof(err));
  }
  struct mesh_tcp_request *sr = NULL, *rr = NULL;
  mesh_tcp_post(r, in, 100, 0, &rr);
  mesh_tcp_post(s, out, 1000, 0, &sr);
  int d = 0, rc = 0;
  size_t z;
  double t0 = now();
  while (rc == 0 && !d && now() - t0 < 5) rc = mesh_tcp_test(rr, &d, &z, err, sizeof(err));
  CHECK(rc == -1 && strstr(err, "sent 1000 bytes but the posted buffer holds 100") && strstr(err, "peer 127.0.0.1"),
        "oversize: %s", err);
  struct mesh_tcp_request *later = NULL;
  CHECK(mesh_tcp_post(r, in, 100, 0, &later) == -1, "a broken comm refuses new requests");
  mesh_tcp_comm_destroy(s);
  mesh_tcp_comm_destroy(r);
  free(out);
  free(in);
}

/* ---------- whole-plugin scenarios, one child process each ---------- */
static void scenario_tcp(void) {
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  CHECK(P->init(&ctx, 1, NULL, logger, NULL) == MESH_ABI_SUCCESS, "init: %s", warnings);
  CHECK(ctx != NULL, "v11 init returns a context");
  int ndev = 0;
  P->devices(&ndev);
  CHECK(ndev == 1, "one device");
  mesh_abi_properties_v11_t pr;
  memset(&pr, 0x5a, sizeof(pr));
  CHECK(P->getProperties(0, &pr) == MESH_ABI_SUCCESS && strcmp(pr.name, "mesh_tcp") == 0 &&
            pr.ptrSupport == MESH_ABI_PTR_HOST && pr.maxRecvs == 1 && pr.vProps.ndevs == 1 && pr.speed > 0 &&
            pr.maxP2pBytes > 0 && pr.maxMultiRequestSize == 1 && pr.netDeviceType == MESH_ABI_DEVICE_HOST,
        "properties");
  CHECK(P->getProperties(1, &pr) != MESH_ABI_SUCCESS, "device 1 does not exist");
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(crc == MESH_ABI_SUCCESS && arc == MESH_ABI_SUCCESS && sc && rc, "connected: %s", warnings);
  if (!sc || !rc) return;
  char err[128] = "";
  CHECK(exchange(sc, rc, 0, 16, err) == 0, "0 bytes: %s", err);
  CHECK(exchange(sc, rc, 1, 16, err) == 0, "1 byte: %s", err);
  CHECK(exchange(sc, rc, 4 << 20, (4 << 20) + 100, err) == 0, "4 MiB: %s", err);
  void *mh = NULL, *req = NULL;
  char buf[16];
  CHECK(P->regMr(sc, buf, sizeof(buf), MESH_ABI_PTR_CUDA, &mh) == MESH_ABI_INVALID_ARGUMENT, "CUDA memory refused");
  void *bufs[2] = {buf, buf};
  size_t sizes[2] = {8, 8};
  int tags[2] = {0, 0};
  void *mhs[2] = {NULL, NULL};
  CHECK(P->irecv(rc, 2, bufs, sizes, tags, mhs, NULL, &req) == MESH_ABI_INVALID_ARGUMENT, "grouped receive refused");
  CHECK(P->iflush(rc, 1, bufs, tags, mhs, &req) == MESH_ABI_SUCCESS && req == NULL, "no flush needed for host memory");
  mesh_abi_vdevice_props_t vp = {1, {0, 0, 0, 0}};
  int d = -1;
  CHECK(P->makeVDevice(&d, &vp) == MESH_ABI_SUCCESS && d == 0, "the one device is its own vNIC");
  vp.ndevs = 2;
  vp.devs[1] = 1;
  CHECK(P->makeVDevice(&d, &vp) != MESH_ABI_SUCCESS, "nothing to merge");
  CHECK(P->closeSend(sc) == 0 && P->closeRecv(rc) == 0 && P->closeListen(lc) == 0, "close");
  /* A handle whose addresses share no subnet with this host: the error names them. */
  struct mesh_handle h;
  memset(&h, 0, sizeof(h));
  h.backend = MESH_BACKEND_TCP;
  h.nsocks = 1;
  h.port = 9;
  h.naddrs = 1;
  h.addrs[0] = ip("10.200.0.5");
  h.prefixes[0] = 30;
  char handle[MESH_ABI_HANDLE_MAXSIZE];
  mesh_handle_pack(&h, handle, sizeof(handle), err, sizeof(err));
  warnings[0] = '\0';
  mesh_abi_device_handle_t *dev = NULL;
  void *s2 = NULL;
  CHECK(P->connect(ctx, 0, handle, &s2, &dev) == MESH_ABI_SYSTEM_ERROR && !s2, "no route");
  CHECK(strstr(warnings, "no local address shares a subnet with the peer's addresses 10.200.0.5 (subnet 10.200.0.4/30)") &&
            strstr(warnings, "lo 127.0.0.1/8"),
        "%s", warnings);
  /* A verbs handle on a TCP rank: both must run the same backend. */
  h.backend = MESH_BACKEND_VERBS;
  mesh_handle_pack(&h, handle, sizeof(handle), err, sizeof(err));
  CHECK(P->connect(ctx, 0, handle, &s2, &dev) == MESH_ABI_INVALID_USAGE && strstr(warnings, "NCCL_MESH_TRANSPORT"),
        "%s", warnings);
  CHECK(P->finalize(ctx) == MESH_ABI_SUCCESS, "finalize");
}

static void scenario_verbs(void) {
  setenv("NCCL_IB_TC", "104", 1);
  CHECK(init_fake_verbs(FAKE_OK) == MESH_ABI_SUCCESS, "init: %s", warnings);
  mesh_abi_properties_v11_t pr;
  CHECK(P->getProperties(0, &pr) == MESH_ABI_SUCCESS && strcmp(pr.name, "mesh_verbs") == 0 && pr.speed == 100000,
        "verbs properties");
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(crc == MESH_ABI_SUCCESS && arc == MESH_ABI_SUCCESS && sc && rc, "connected: %s", warnings);
  if (!sc || !rc) return;
  CHECK(fake_rec.rtr_calls == 2 && fake_rec.last_sgid_index == 3, "automatic GID index 3 (RoCE v2 IPv4), got %d",
        fake_rec.last_sgid_index);
  static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  CHECK(memcmp(fake_rec.last_dgid, want, 16) == 0, "remote GID ::ffff:127.0.0.1");
  CHECK(fake_rec.last_traffic_class == 104, "traffic class from NCCL_IB_TC: %d", fake_rec.last_traffic_class);
  char err[128] = "";
  CHECK(exchange(sc, rc, 0, 16, err) == 0, "0 bytes: %s", err);
  CHECK(exchange(sc, rc, 12345, 20000, err) == 0, "12345 bytes: %s", err);
  warnings[0] = '\0';
  CHECK(exchange(sc, rc, 200, 100, err) == -2, "a message larger than the receive buffer fails the receive");
  CHECK(strstr(warnings, "local length error") && strstr(warnings, "NIC fake0:1") && strstr(warnings, "GID 3"),
        "%s", warnings);
  P->closeSend(sc);
  P->closeRecv(rc);
  P->closeListen(lc);
  CHECK(fake_rec.qps_alive == 0 && fake_rec.cqs_alive == 0 && fake_rec.pds_alive == 0 && fake_rec.ctxs_alive == 0 &&
            fake_rec.mrs_alive == 0,
        "every verbs object released (qp %d cq %d pd %d ctx %d mr %d)", fake_rec.qps_alive, fake_rec.cqs_alive,
        fake_rec.pds_alive, fake_rec.ctxs_alive, fake_rec.mrs_alive);
}

static void scenario_verbs_rtr_fails(void) {
  CHECK(init_fake_verbs(FAKE_FAIL_RTR) == MESH_ABI_SUCCESS, "init: %s", warnings);
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(!sc && !rc && crc == MESH_ABI_SYSTEM_ERROR && arc == MESH_ABI_SYSTEM_ERROR, "both fail: %d %d", crc, arc);
  CHECK(strstr(warnings, "ibv_modify_qp to RTR failed") && strstr(warnings, "peer 127.0.0.1") &&
            strstr(warnings, "NIC fake0:1") && strstr(warnings, "GID 3 (0000:0000:0000:0000:0000:ffff:7f00:0001)") &&
            strstr(warnings, "subnet 127.0.0.0/8"),
        "the error names peer, NIC, GID and subnet: %s", warnings);
  P->closeListen(lc);
  CHECK(fake_rec.qps_alive == 0 && fake_rec.ctxs_alive == 0, "released after the failure");
}

static void scenario_verbs_port_down(void) {
  CHECK(init_fake_verbs(FAKE_PORT_DOWN) == MESH_ABI_SUCCESS, "init: %s", warnings);
  void *sc, *rc, *lc;
  mesh_abi_result_t crc, arc;
  connect_self(&sc, &rc, &lc, &crc, &arc);
  CHECK(crc == MESH_ABI_SYSTEM_ERROR && strstr(warnings, "not ACTIVE") && strstr(warnings, "NIC fake0:1"), "%s",
        warnings);
  P->closeListen(lc);
}

static void scenario_gid_forced_not_ipv4(void) {
  setenv("NCCL_MESH_GID_INDEX", "1", 1);
  CHECK(init_fake_verbs(FAKE_OK) == MESH_ABI_SYSTEM_ERROR, "init must fail");
  CHECK(strstr(warnings, "GID 1 of fake0:1") && strstr(warnings, "holds no IPv4 address"), "%s", warnings);
}

static void scenario_auto_falls_back(void) {
  new_tree();
  setenv("NCCL_MESH_SYSFS_ROOT", tree, 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  fake_verbs_reset("", FAKE_OK);
  mesh_verbs_use_ops(&fake_verbs_ops);
  CHECK(P->init(&ctx, 1, NULL, logger, NULL) == MESH_ABI_SUCCESS, "init: %s", warnings);
  mesh_abi_properties_v11_t pr;
  CHECK(P->getProperties(0, &pr) == MESH_ABI_SUCCESS && strcmp(pr.name, "mesh_tcp") == 0, "auto: TCP without RoCE");
}

static void scenario_bad_env(void) {
  setenv("NCCL_MESH_NSOCKS", "99", 1);
  expect_init_fails(MESH_ABI_INVALID_ARGUMENT, "NCCL_MESH_NSOCKS=99");
}

static void scenario_no_interface(void) {
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "=nosuchif0", 1);
  expect_init_fails(MESH_ABI_SYSTEM_ERROR, "nosuchif0");
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  test_subnet();
  test_handle();
  test_slices();
  make_tree();
  test_gid();
  test_sock();
  test_tcp();
  printf("unit: %d checks, %d failed\n", checks, failures);
  run_scenario("tcp (plugin API, v11)", scenario_tcp);
  run_scenario("verbs (fake)", scenario_verbs);
  run_scenario("verbs RTR fails", scenario_verbs_rtr_fails);
  run_scenario("verbs port down", scenario_verbs_port_down);
  run_scenario("GID index forced, no IPv4", scenario_gid_forced_not_ipv4);
  run_scenario("auto without RoCE -> tcp", scenario_auto_falls_back);
  run_scenario("bad NCCL_MESH_NSOCKS", scenario_bad_env);
  run_scenario("no matching interface", scenario_no_interface);
  return finish();
}
