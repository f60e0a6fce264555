/* SPDX-License-Identifier: GPL-3.0-or-later
 * test_route.c: unit tests of the per-peer port choice for any cabling (route.c, gid.c's rails, the
 * connector over several routes, the TCP slices' rotation over sockets) and of the plugin's behaviour
 * per cabling case: rails, a non-neighbour reached at its node address (TCP), refused (verbs).
 */
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

static struct mesh_ifaddr ifa(const char *name, const char *addr, int prefix) {
  struct mesh_ifaddr a;
  memset(&a, 0, sizeof(a));
  snprintf(a.name, sizeof(a.name), "%s", name);
  a.addr = ip(addr);
  a.prefix = prefix;
  return a;
}

static struct mesh_handle peer_handle(const char *node, int n, const char *const *addrs, const int *prefixes) {
  struct mesh_handle h;
  memset(&h, 0, sizeof(h));
  h.backend = MESH_BACKEND_TCP;
  h.nsocks = 4;
  h.naddrs = (uint8_t)n;
  for (int i = 0; i < n; i++) {
    h.addrs[i] = ip(addrs[i]);
    h.prefixes[i] = (uint8_t)prefixes[i];
  }
  h.node_addr = node ? ip(node) : 0;
  return h;
}

static int route_is(const struct mesh_route *r, const char *local, const char *peer) {
  return r->local == (local ? ip(local) : 0) && r->peer == ip(peer);
}

/* ---------- the plan for each cabling case ---------- */
static void test_plan_cases(void) {
  struct mesh_plan p;
  /* Full mesh, one cable per pair, management alongside: today's choice, unchanged. */
  struct mesh_ifaddr mesh[] = {ifa("mgmt0", "10.99.0.10", 24), ifa("enp1", "192.168.100.1", 30),
                               ifa("enp2", "192.168.100.5", 30)};
  const char *n2[] = {"10.99.0.11", "192.168.100.2", "192.168.100.9"};
  const int p2[] = {24, 30, 30};
  struct mesh_handle h = peer_handle(NULL, 3, n2, p2);
  CHECK(mesh_plan_tcp(mesh, 3, &h, 0, &p) == MESH_PLAN_DIRECT && p.nroutes == 1 &&
            route_is(&p.routes[0], "192.168.100.1", "192.168.100.2") && strcmp(p.routes[0].ifname, "enp1") == 0 &&
            p.routes[0].prefix == 30 && !p.routes[0].via_node,
        "full mesh: the /30 cable, not management (%d routes)", p.nroutes);
  h = peer_handle("10.255.0.2", 3, n2, p2);
  CHECK(mesh_plan_tcp(mesh, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_DIRECT && p.nroutes == 1,
        "full mesh with node addresses: still the cable");

  /* Rails: two cables to one peer, each its own /30; the peer lists them in the other order. */
  struct mesh_ifaddr rails[] = {ifa("mgmt0", "10.99.0.10", 24), ifa("enp1", "192.168.100.1", 30),
                                ifa("enp2", "192.168.100.5", 30)};
  const char *rb[] = {"192.168.100.6", "10.99.0.11", "192.168.100.2"};
  const int rp[] = {30, 24, 30};
  h = peer_handle("10.255.0.2", 3, rb, rp);
  CHECK(mesh_plan_tcp(rails, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_DIRECT && p.nroutes == 2 &&
            route_is(&p.routes[0], "192.168.100.1", "192.168.100.2") &&
            route_is(&p.routes[1], "192.168.100.5", "192.168.100.6") && strcmp(p.routes[1].ifname, "enp2") == 0,
        "rails: both cables, in local order (%d routes)", p.nroutes);
  char desc[MESH_ERRLEN];
  mesh_routes_desc(p.routes, p.nroutes, desc, sizeof(desc));
  CHECK(strstr(desc, "peer 192.168.100.2, NIC enp1 (192.168.100.1), GID -, subnet 192.168.100.0/30; peer "
                     "192.168.100.6, NIC enp2 (192.168.100.5)") != NULL,
        "%s", desc);

  /* A ring's non-neighbour: no cable in common, reached at its node address from ours. */
  struct mesh_ifaddr ring[] = {ifa("mgmt0", "10.99.0.10", 24), ifa("east", "192.168.100.1", 30),
                               ifa("west", "192.168.100.14", 30)};
  const char *far[] = {"10.99.0.12", "192.168.100.6", "192.168.100.9"};
  const int fp[] = {24, 30, 30};
  h = peer_handle("10.255.0.3", 3, far, fp);
  CHECK(mesh_plan_tcp(ring, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_NODE && p.nroutes == 1 &&
            route_is(&p.routes[0], "10.255.0.1", "10.255.0.3") && p.routes[0].via_node,
        "non-neighbour: node address, not the management /24 both share (kind %d)", p.kind);
  mesh_route_desc(&p.routes[0], NULL, NULL, desc, sizeof(desc));
  CHECK(strcmp(desc, "peer 10.255.0.3 (node address, routed), from 10.255.0.1, GID -, subnet -") == 0, "%s", desc);
  /* Without a node address of our own: as before, the shared management network (and the kernel's source
   * address when nothing is shared). */
  CHECK(mesh_plan_tcp(ring, 3, &h, 0, &p) == MESH_PLAN_DIRECT && route_is(&p.routes[0], "10.99.0.10", "10.99.0.12"),
        "no own node address: management, as before");
  CHECK(mesh_plan_tcp(ring + 1, 2, &h, 0, &p) == MESH_PLAN_NODE && route_is(&p.routes[0], NULL, "10.255.0.3"),
        "no own node address, nothing shared: the peer's node address from the kernel's choice");
  mesh_route_desc(&p.routes[0], NULL, NULL, desc, sizeof(desc));
  CHECK(strstr(desc, "from the kernel's source address") != NULL, "%s", desc);
  /* A peer without a node address and no cable: nothing to do (the plugin's message says what to set). */
  h = peer_handle(NULL, 2, far + 1, fp + 1);
  CHECK(mesh_plan_tcp(ring, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_NONE && p.nroutes == 0, "no route");

  /* Partial mesh: two cables to B, one to C, none to D. */
  struct mesh_ifaddr part[] = {ifa("p1", "172.20.0.1", 31), ifa("p2", "172.20.0.3", 31), ifa("p3", "172.20.0.5", 31)};
  const char *b[] = {"172.20.0.0", "172.20.0.2"}, *c[] = {"172.20.0.4", "172.20.0.8"}, *d[] = {"172.20.0.10"};
  const int p31[] = {31, 31};
  h = peer_handle("10.255.0.2", 2, b, p31);
  CHECK(mesh_plan_tcp(part, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_DIRECT && p.nroutes == 2, "B: 2 rails (/31)");
  h = peer_handle("10.255.0.3", 2, c, p31);
  CHECK(mesh_plan_tcp(part, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_DIRECT && p.nroutes == 1 &&
            route_is(&p.routes[0], "172.20.0.5", "172.20.0.4"),
        "C: its one cable");
  h = peer_handle("10.255.0.4", 1, d, p31);
  CHECK(mesh_plan_tcp(part, 3, &h, ip("10.255.0.1"), &p) == MESH_PLAN_NODE, "D: node address");

  CHECK(mesh_rail_sockets(4, 1) == 4 && mesh_rail_sockets(4, 2) == 4 && mesh_rail_sockets(3, 2) == 4 &&
            mesh_rail_sockets(1, 2) == 2 && mesh_rail_sockets(5, 3) == 6 && mesh_rail_sockets(16, 3) == 16 &&
            mesh_rail_sockets(4, 20) == 16,
        "sockets: a multiple of the rails, at most 16");
}

/* Rings of 4..16 nodes (and the chains they become without their last cable): cable k joins node k
 * (192.168.k.1/30) and node k+1 (192.168.k.2/30); node n's node address is 10.255.0.n+1.  Every node
 * reaches its neighbours over the cable between them and every other node at its node address. */
static void test_rings_and_chains(void) {
  int bad = 0, cases = 0;
  for (int chain = 0; chain <= 1; chain++) {
    for (int n = 4; n <= 16; n++) {
      int ncables = chain ? n - 1 : n;
      for (int i = 0; i < n; i++) {
        struct mesh_ifaddr loc[3];
        int nl = 0;
        char a[32];
        loc[nl++] = ifa("mgmt0", "10.99.0.10", 24);
        loc[nl - 1].addr += (uint32_t)i;
        if (i < ncables) {
          snprintf(a, sizeof(a), "192.168.%d.1", i);
          loc[nl++] = ifa("east", a, 30);
        }
        int w = (i + n - 1) % n;
        if (w < ncables && !(chain && i == 0)) {
          snprintf(a, sizeof(a), "192.168.%d.2", w);
          loc[nl++] = ifa("west", a, 30);
        }
        for (int j = 0; j < n; j++) {
          if (j == i) continue;
          struct mesh_handle h;
          memset(&h, 0, sizeof(h));
          h.addrs[h.naddrs] = ip("10.99.0.10") + (uint32_t)j;
          h.prefixes[h.naddrs++] = 24;
          if (j < ncables) {
            snprintf(a, sizeof(a), "192.168.%d.1", j);
            h.addrs[h.naddrs] = ip(a);
            h.prefixes[h.naddrs++] = 30;
          }
          int jw = (j + n - 1) % n;
          if (jw < ncables && !(chain && j == 0)) {
            snprintf(a, sizeof(a), "192.168.%d.2", jw);
            h.addrs[h.naddrs] = ip(a);
            h.prefixes[h.naddrs++] = 30;
          }
          h.node_addr = ip("10.255.0.1") + (uint32_t)j;
          struct mesh_plan p;
          int kind = mesh_plan_tcp(loc, nl, &h, ip("10.255.0.1") + (uint32_t)i, &p);
          int east = j == (i + 1) % n && i < ncables, west = i == (j + 1) % n && j < ncables;
          int ok;
          if (east) {
            snprintf(a, sizeof(a), "192.168.%d.2", i);
            ok = kind == MESH_PLAN_DIRECT && p.nroutes == 1 && p.routes[0].peer == ip(a) &&
                 strcmp(p.routes[0].ifname, "east") == 0;
          } else if (west) {
            snprintf(a, sizeof(a), "192.168.%d.1", j);
            ok = kind == MESH_PLAN_DIRECT && p.nroutes == 1 && p.routes[0].peer == ip(a) &&
                 strcmp(p.routes[0].ifname, "west") == 0;
          } else {
            ok = kind == MESH_PLAN_NODE && p.routes[0].peer == h.node_addr &&
                 p.routes[0].local == ip("10.255.0.1") + (uint32_t)i;
          }
          cases++;
          if (!ok) {
            bad++;
            fprintf(stderr, "%s of %d: node %d -> %d: kind %d, %d routes\n", chain ? "chain" : "ring", n, i, j, kind,
                    p.nroutes);
          }
        }
      }
    }
  }
  CHECK(bad == 0 && cases == 2704, "rings and chains of 4..16 nodes: %d of %d pairs wrong", bad, cases);
  printf("rings and chains of 4..16 nodes: %d ordered pairs planned\n", cases);
}

/* ---------- verbs: the NICs facing a peer ---------- */
static struct mesh_nic nic(const char *dev, const char *addr, int prefix, int active) {
  struct mesh_nic n;
  memset(&n, 0, sizeof(n));
  snprintf(n.dev, sizeof(n.dev), "%s", dev);
  n.port = 1;
  n.addr = ip(addr);
  n.prefix = prefix;
  n.active = active;
  return n;
}

static void test_nic_rails(void) {
  struct mesh_nic nics[] = {nic("mlx5_0", "192.168.100.1", 30, 1), nic("mlx5_1", "192.168.100.5", 30, 1),
                            nic("mlx5_2", "192.168.100.9", 30, 1)};
  uint32_t peer[] = {ip("192.168.100.6"), ip("192.168.100.2")};
  int ni[4], pi[4];
  CHECK(mesh_nic_rails(nics, 3, peer, 2, ni, pi, 4) == 2 && ni[0] == 0 && pi[0] == 1 && ni[1] == 1 && pi[1] == 0,
        "two NICs face the peer");
  nics[1].active = 0;
  CHECK(mesh_nic_rails(nics, 3, peer, 2, ni, pi, 4) == 1 && ni[0] == 0, "a port that is down is left out");
  nics[0].active = 0;
  CHECK(mesh_nic_rails(nics, 3, peer, 2, ni, pi, 4) == 2, "all down: all kept (connect names the state)");
  uint32_t non_neighbour[] = {ip("192.168.100.14"), ip("10.255.0.3")};
  CHECK(mesh_nic_rails(nics, 3, non_neighbour, 2, ni, pi, 4) == 0, "a non-neighbour: no NIC");
  /* successive connections to one peer take its rails in turn; other peers count on their own */
  unsigned a0 = mesh_rail_next(ip("192.168.100.2")), b0 = mesh_rail_next(ip("192.168.100.10"));
  unsigned a1 = mesh_rail_next(ip("192.168.100.2")), a2 = mesh_rail_next(ip("192.168.100.2"));
  CHECK(a0 == 0 && b0 == 0 && a1 == 1 && a2 == 2, "rail counters %u %u %u %u", a0, b0, a1, a2);
}

/* ---------- a connection over two routes, and the slices' rotation ---------- */
static uint64_t bytes_received(int fd) {
  struct tcp_info ti;
  socklen_t sl = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &sl) != 0) return 0;
  return ti.tcpi_bytes_received;
}

static void test_rail_connection(void) {
  char err[MESH_ERRLEN];
  struct mesh_route routes[2];
  memset(routes, 0, sizeof(routes));
  routes[0].local = ip("127.0.0.1");
  routes[1].local = ip("127.0.0.2"); /* lo holds all of 127/8: two "cables" on one host */
  routes[0].peer = routes[1].peer = ip("127.0.0.1");
  routes[0].prefix = routes[1].prefix = 8;
  struct mesh_acceptor a;
  struct mesh_connector c;
  CHECK(mesh_acceptor_open(&a, 9, err, sizeof(err)) == 0, "%s", err);
  CHECK(mesh_connector_start(&c, routes, 2, a.port, 9, 4, 5000, err, sizeof(err)) == 0, "%s", err);
  int cd = 0, ad = 0;
  double t0 = now();
  while ((!cd || !ad) && now() - t0 < 5) {
    if (!cd) cd = mesh_connector_progress(&c, err, sizeof(err));
    if (!ad) ad = mesh_acceptor_progress(&a, err, sizeof(err));
    if (cd < 0 || ad < 0) break;
  }
  CHECK(cd == 1 && ad == 1, "connected over two routes: %s", err);
  int rfds[MESH_MAX_SOCKS], n = 0;
  mesh_acceptor_take(&a, rfds, &n);
  mesh_acceptor_close(&a);
  CHECK(n == 4, "4 sockets, got %d", n);
  if (n != 4) return;
  int spread = 1;
  for (int i = 0; i < 4; i++) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    getpeername(rfds[i], (struct sockaddr *)&sa, &sl);
    spread &= ntohl(sa.sin_addr.s_addr) == routes[i % 2].local;
  }
  CHECK(spread, "socket i leaves from route i mod 2's address");
  struct mesh_route per_sock[4] = {routes[0], routes[1], routes[0], routes[1]};
  struct mesh_cable_opts opts = {10000, "/sys"};
  struct mesh_tcp_comm *s = mesh_tcp_comm_create(1, c.fds, per_sock, 4, "rails test", &opts, err, sizeof(err));
  struct mesh_tcp_comm *r = mesh_tcp_comm_create(0, rfds, per_sock, 4, "rails test", &opts, err, sizeof(err));
  CHECK(s && r, "comms: %s", err);
  if (!s || !r) return;
  uint64_t before[4];
  for (int j = 0; j < 4; j++) before[j] = bytes_received(rfds[j]);
  /* 8 small messages (one slice each: they must rotate, 2 per socket), 4 MiB (4 slices from socket 0 on),
   * an empty one (a header only, on socket 0). */
  enum { NMSG = 10 };
  size_t sizes[NMSG] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, (size_t)4 << 20, 0};
  unsigned char *out = malloc((size_t)4 << 20), *in[NMSG];
  for (size_t i = 0; i < ((size_t)4 << 20); i++) out[i] = (unsigned char)(i * 13 + (i >> 10));
  struct mesh_tcp_request *sr[NMSG], *rr[NMSG];
  for (int k = 0; k < NMSG; k++) {
    in[k] = calloc(1, sizes[k] + 16);
    mesh_tcp_post(r, in[k], sizes[k] + 16, 0, &rr[k]);
  }
  for (int k = 0; k < NMSG; k++) mesh_tcp_post(s, out, sizes[k], 0, &sr[k]);
  int ok = 1;
  for (int k = 0; k < NMSG; k++) {
    int sd = 0, rd = 0;
    size_t ss = 0, rs = 0;
    t0 = now();
    while ((!sd || !rd) && now() - t0 < 5) {
      if (!sd && mesh_tcp_test(sr[k], &sd, &ss, err, sizeof(err)) != 0) break;
      if (!rd && mesh_tcp_test(rr[k], &rd, &rs, err, sizeof(err)) != 0) break;
    }
    ok &= sd && rd && ss == sizes[k] && rs == sizes[k] && memcmp(in[k], out, sizes[k]) == 0;
  }
  CHECK(ok, "10 messages arrive whole and in order: %s", err);
  const uint64_t hdr = 40, expect0 = 2 * (1000 + hdr) + (1 << 20) + hdr + hdr, expect = 2 * (1000 + hdr) + (1 << 20) + hdr;
  uint64_t got[4];
  for (int j = 0; j < 4; j++) got[j] = bytes_received(rfds[j]) - before[j];
  CHECK(got[0] == expect0 && got[1] == expect && got[2] == expect && got[3] == expect,
        "bytes per socket %llu %llu %llu %llu, expected %llu %llu x3 (small messages rotate; no empty headers)",
        (unsigned long long)got[0], (unsigned long long)got[1], (unsigned long long)got[2],
        (unsigned long long)got[3], (unsigned long long)expect0, (unsigned long long)expect);
  mesh_tcp_comm_destroy(s);
  mesh_tcp_comm_destroy(r);
  free(out);
  for (int k = 0; k < NMSG; k++) free(in[k]);
}

/* ---------- the plugin per cabling case ---------- */
static void rewrite_addrs(char *handle, const char *addr, int prefix, const char *node) {
  struct mesh_handle h;
  char err[MESH_ERRLEN];
  if (mesh_handle_unpack(handle, MESH_ABI_HANDLE_MAXSIZE, &h, err, sizeof(err)) != 0) abort();
  h.naddrs = 1;
  h.addrs[0] = ip(addr);
  h.prefixes[0] = (uint8_t)prefix;
  if (node) h.node_addr = ip(node);
  if (mesh_handle_pack(&h, handle, MESH_ABI_HANDLE_MAXSIZE, err, sizeof(err)) != 0) abort();
}

/* TCP to a peer no cable faces: its node address, bound to ours, logged; data intact. */
static void scenario_node_address(void) {
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  setenv("NCCL_MESH_NODE_ADDR", "127.0.0.3", 1);
  setenv("NCCL_MESH_CONNECT_TIMEOUT_MS", "500", 1);
  CHECK(P->init(&ctx, 1, NULL, logger, NULL) == MESH_ABI_SUCCESS, "init: %s", warnings);
  CHECK(strstr(infos, "node address 127.0.0.3") != NULL, "init names the node address: %s", infos);
  char handle[MESH_ABI_HANDLE_MAXSIZE] = {0};
  void *lc = NULL, *sc = NULL, *rc = NULL;
  CHECK(P->listen(ctx, 0, handle, &lc) == MESH_ABI_SUCCESS, "listen");
  struct mesh_handle h;
  char err[MESH_ERRLEN];
  CHECK(mesh_handle_unpack(handle, sizeof(handle), &h, err, sizeof(err)) == 0 && h.node_addr == ip("127.0.0.3"),
        "the handle carries the node address");
  /* As a ring's non-neighbour sees it: addresses on cables elsewhere, and the node address. */
  rewrite_addrs(handle, "10.200.0.5", 30, NULL);
  infos[0] = '\0';
  mesh_abi_result_t crc, arc;
  connect_with(handle, lc, &sc, &rc, &crc, &arc);
  CHECK(crc == MESH_ABI_SUCCESS && arc == MESH_ABI_SUCCESS && sc && rc, "connected: %s", warnings);
  CHECK(strstr(infos, "connect: no cable faces the peer (10.200.0.5 (subnet 10.200.0.4/30); node address 127.0.0.3)"
                      ": TCP to its node address over the routed cables: peer 127.0.0.3 (node address, routed), "
                      "from 127.0.0.3") != NULL,
        "the connect says it took the node address: %s", infos);
  CHECK(strstr(infos, "accept: peer 127.0.0.3 (node address, routed), from 127.0.0.3") != NULL, "accept: %s", infos);
  char e2[128] = "";
  CHECK(exchange(sc, rc, (size_t)3 << 20, (size_t)4 << 20, e2) == 0, "3 MiB over the node route: %s", e2);
  CHECK(P->closeSend(sc) == 0 && P->closeRecv(rc) == 0, "close");
  /* A node address nothing routes to: the error names it and where to look. */
  rewrite_addrs(handle, "10.200.0.5", 30, "198.51.100.9");
  warnings[0] = '\0';
  connect_with(handle, lc, &sc, &rc, &crc, &arc);
  CHECK(crc == MESH_ABI_SYSTEM_ERROR && !sc && strstr(warnings, "peer 198.51.100.9 (node address, routed)") &&
            strstr(warnings, "check the node-address routes"),
        "unroutable node address: %s", warnings);
  P->closeListen(lc);
  P->finalize(ctx);
}

static void scenario_node_address_not_here(void) {
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  setenv("NCCL_MESH_NODE_ADDR", "198.51.100.77", 1);
  expect_init_fails(MESH_ABI_SYSTEM_ERROR, "NCCL_MESH_NODE_ADDR=198.51.100.77 is not an address of this host");
}

static void scenario_node_address_bad(void) {
  setenv("NCCL_MESH_NODE_ADDR", "10.255.0.1/32", 1);
  expect_init_fails(MESH_ABI_INVALID_ARGUMENT, "NCCL_MESH_NODE_ADDR=10.255.0.1/32: expected");
}

/* verbs to a peer no cable faces: refused, naming the peer's addresses, its node address and the way out. */
static void scenario_verbs_refuses_non_neighbour(void) {
  setenv("NCCL_MESH_NODE_ADDR", "127.0.0.1", 1);
  CHECK(init_fake_verbs(FAKE_OK) == MESH_ABI_SUCCESS, "init: %s", warnings);
  char handle[MESH_ABI_HANDLE_MAXSIZE] = {0};
  void *lc = NULL, *sc = NULL, *rc = NULL;
  CHECK(P->listen(ctx, 0, handle, &lc) == MESH_ABI_SUCCESS, "listen");
  rewrite_addrs(handle, "192.168.100.9", 30, "10.255.0.3");
  mesh_abi_result_t crc, arc;
  connect_with(handle, lc, &sc, &rc, &crc, &arc);
  CHECK(crc == MESH_ABI_SYSTEM_ERROR && !sc, "refused (%d)", crc);
  CHECK(strstr(warnings, "the verbs backend reaches only peers it shares a cable with") &&
            strstr(warnings, "192.168.100.9 (subnet 192.168.100.8/30); node address 10.255.0.3") &&
            strstr(warnings, "this node's RoCE ports: fake0:1 127.0.0.0/8") &&
            strstr(warnings, "NCCL_MESH_TRANSPORT=tcp"),
        "the refusal says who and what to do: %s", warnings);
  CHECK(fake_rec.qps_alive == 0 && fake_rec.ctxs_alive == 0, "nothing opened for it");
  P->closeListen(lc);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  test_plan_cases();
  test_rings_and_chains();
  test_nic_rails();
  test_rail_connection();
  printf("route: %d checks, %d failed\n", checks, failures);
  run_scenario("tcp: node address", scenario_node_address);
  run_scenario("tcp: node address not here", scenario_node_address_not_here);
  run_scenario("bad NCCL_MESH_NODE_ADDR", scenario_node_address_bad);
  run_scenario("verbs: non-neighbour refused", scenario_verbs_refuses_non_neighbour);
  return finish();
}
