/* SPDX-License-Identifier: GPL-3.0-or-later
 * plugin.c: the Mesh network — one implementation — and the tables NCCL finds by the symbols
 * ncclNetPlugin_v8 .. ncclNetPlugin_v11.
 *
 * The plugin shows NCCL one network device that stands for all of the node's cables: for each connection
 * it picks, from the peer's addresses in the connect handle and whatever device index NCCL passed, the
 * cables facing the peer (route.c): TCP spreads a connection's sockets over all of them (rails) and
 * reaches a peer no cable faces at its node address; verbs puts each connection's queue pair on one
 * facing NIC, the next connection to that peer on the next one, and refuses a peer no cable faces.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mesh.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_inited;
static mesh_abi_result_t g_init_rc;
static struct mesh_config g_cfg;
static int g_backend;
static struct mesh_ifaddr g_ifs[MESH_MAX_IFADDRS];
static int g_nifs;
static struct mesh_nic g_nics[MESH_MAX_NICS];
static int g_nnics;
static char g_pci_path[PATH_MAX];
static int g_speed;
static int g_ctx_token; /* v11 init's ctx points here */

struct mesh_listen {
  int backend;
  int nsocks;
  struct mesh_acceptor acc;
  struct mesh_verbs_conn *vc; /* verbs: QP exchange in progress */
};

struct mesh_comm {
  int backend;
  int is_send;
  struct mesh_tcp_comm *tcp;
  struct mesh_verbs_comm *verbs;
};

struct mesh_connect_state {
  int backend;
  struct mesh_connector conn;
  struct mesh_nic nic;
  struct mesh_plan plan; /* TCP: the routes; verbs: routes[0] */
  struct mesh_verbs_conn *vc;
};

static void list_nics(char *out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < g_nnics; i++) {
    char s[MESH_STR];
    mesh_subnet_str(g_nics[i].addr, g_nics[i].prefix, s, sizeof(s));
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s:%d %s", i ? ", " : "", g_nics[i].dev, g_nics[i].port, s);
  }
  if (g_nnics == 0) snprintf(out, len, "none");
}

static void list_locals(char *out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < g_nifs; i++) {
    char a[MESH_STR];
    mesh_ipv4_str(g_ifs[i].addr, a, sizeof(a));
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s %s/%d", i ? ", " : "", g_ifs[i].name, a, g_ifs[i].prefix);
  }
  if (g_nifs == 0) snprintf(out, len, "none");
}

static int iface_speed(const char *name) {
  char path[512], text[64];
  snprintf(path, sizeof(path), "%s/class/net/%s/speed", g_cfg.sysfs_root, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  int v = 0;
  if (fgets(text, sizeof(text), f) != NULL) v = atoi(text);
  fclose(f);
  return v > 0 ? v : 0;
}

static mesh_abi_result_t do_init(mesh_abi_logger_t logger) {
  pthread_mutex_lock(&g_mu);
  if (g_inited) {
    pthread_mutex_unlock(&g_mu);
    return g_init_rc;
  }
  char err[MESH_ERRLEN], notes[2048], locals[1024];
  g_inited = 1;
  g_init_rc = MESH_ABI_SUCCESS;
  mesh_log_set_logger(logger, 0);
  if (mesh_config_load(&g_cfg, err, sizeof(err)) != 0) {
    mesh_warn("%s", err);
    g_init_rc = MESH_ABI_INVALID_ARGUMENT;
    goto out;
  }
  mesh_log_set_logger(logger, g_cfg.debug);
  g_nifs = mesh_if_list(g_cfg.ifname, g_ifs, MESH_MAX_IFADDRS);
  if (g_nifs < 0) g_nifs = 0;
  list_locals(locals, sizeof(locals));
  char node[MESH_STR] = "none";
  if (g_cfg.node_addr != 0) {
    mesh_ipv4_str(g_cfg.node_addr, node, sizeof(node));
    if (!mesh_addr_is_local(g_cfg.node_addr)) {
      mesh_warn("NCCL_MESH_NODE_ADDR=%s is not an address of this host: the node address must be assigned here "
                "(on lo or a dummy interface) and routed to the other nodes over the data cables", node);
      g_init_rc = MESH_ABI_SYSTEM_ERROR;
      goto out;
    }
  }
  g_backend = MESH_BACKEND_TCP;
  if (g_cfg.transport != MESH_TRANSPORT_TCP) {
    if (mesh_verbs_ops_in_use() == NULL) mesh_verbs_use_ops(mesh_verbs_real_ops(err, sizeof(err)));
    if (mesh_verbs_ops_in_use() == NULL) {
      snprintf(notes, sizeof(notes), "%s", err);
      g_nnics = 0;
    } else {
      g_nnics = mesh_nic_scan(g_cfg.sysfs_root, g_cfg.gid_index, g_ifs, g_nifs, g_nics, MESH_MAX_NICS, notes,
                              sizeof(notes));
    }
    int usable = 0;
    for (int i = 0; i < g_nnics; i++) usable += g_nics[i].prefix >= 0;
    if (usable > 0) {
      g_backend = MESH_BACKEND_VERBS;
    } else if (g_cfg.transport == MESH_TRANSPORT_VERBS) {
      mesh_warn("NCCL_MESH_TRANSPORT=verbs but no RoCE port has an IPv4 GID on a local subnet (%s; %s; addresses: %s)",
                g_nnics ? "GIDs found but their addresses are not on this host's interfaces" : "no candidate GID",
                notes, locals);
      g_init_rc = MESH_ABI_SYSTEM_ERROR;
      goto out;
    } else {
      mesh_info("no usable RoCE port (%s): using TCP", notes);
    }
  }
  if (g_backend == MESH_BACKEND_TCP) {
    if (g_nifs == 0) {
      mesh_warn("no IPv4 interface with a subnet matches NCCL_MESH_IFNAME='%s'", g_cfg.ifname);
      g_init_rc = MESH_ABI_SYSTEM_ERROR;
      goto out;
    }
    for (int i = 0; i < g_nifs; i++) {
      int s = iface_speed(g_ifs[i].name);
      if (s > g_speed) g_speed = s;
    }
    if (g_speed == 0) g_speed = 10000;
    mesh_info("backend tcp, %d sockets per connection, addresses: %s; node address %s; a cable lost for %d ms ends "
              "its connections",
              g_cfg.nsocks, locals, node, g_cfg.cable_timeout_ms);
  } else {
    char path[512];
    snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", g_cfg.sysfs_root, g_nics[0].dev);
    if (realpath(path, g_pci_path) == NULL) g_pci_path[0] = '\0';
    for (int i = 0; i < g_nnics; i++) {
      if (g_nics[i].speed_mbps > g_speed) g_speed = g_nics[i].speed_mbps;
      char a[MESH_STR], s[MESH_STR];
      mesh_ipv4_str(g_nics[i].addr, a, sizeof(a));
      mesh_subnet_str(g_nics[i].addr, g_nics[i].prefix, s, sizeof(s));
      mesh_info("backend verbs: NIC %s:%d GID %d (%s) address %s subnet %s%s", g_nics[i].dev, g_nics[i].port,
                g_nics[i].gid_index, g_nics[i].gid_text, a, s, g_nics[i].active ? "" : " (port not ACTIVE)");
    }
    if (g_speed == 0) g_speed = 100000;
  }
out:
  pthread_mutex_unlock(&g_mu);
  return g_init_rc;
}

static mesh_abi_result_t do_devices(int *ndev) {
  *ndev = 1;
  return MESH_ABI_SUCCESS;
}

struct props {
  const char *name;
  char *pci;
  int speed;
};

static void common_props(struct props *p) {
  p->name = g_backend == MESH_BACKEND_VERBS ? "mesh_verbs" : "mesh_tcp";
  p->pci = g_pci_path[0] ? g_pci_path : NULL;
  p->speed = g_speed;
}

static mesh_abi_result_t check_dev(int dev) {
  if (dev != 0) {
    mesh_warn("device %d requested; the Mesh plugin has one device (0)", dev);
    return MESH_ABI_INVALID_ARGUMENT;
  }
  return MESH_ABI_SUCCESS;
}

#define FILL_COMMON(props, p)                    \
  do {                                           \
    memset(props, 0, sizeof(*props));            \
    props->name = (char *)(p).name;              \
    props->pciPath = (p).pci;                    \
    props->guid = 0x4d657368ULL; /* "Mesh" */    \
    props->ptrSupport = MESH_ABI_PTR_HOST;       \
    props->regIsGlobal = 0;                      \
    props->speed = (p).speed;                    \
    props->port = 1;                             \
    props->latency = 0;                          \
    props->maxComms = 65536;                     \
    props->maxRecvs = 1;                         \
    props->netDeviceType = MESH_ABI_DEVICE_HOST; \
    props->netDeviceVersion = 0;                 \
  } while (0)

static mesh_abi_result_t props_v8(int dev, mesh_abi_properties_v8_t *props) {
  if (check_dev(dev)) return MESH_ABI_INVALID_ARGUMENT;
  struct props p;
  common_props(&p);
  FILL_COMMON(props, p);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t props_v9(int dev, mesh_abi_properties_v9_t *props) {
  if (check_dev(dev)) return MESH_ABI_INVALID_ARGUMENT;
  struct props p;
  common_props(&p);
  FILL_COMMON(props, p);
  props->forceFlush = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = (size_t)1 << 30;
  props->maxCollBytes = (size_t)1 << 30;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t props_v11(int dev, mesh_abi_properties_v11_t *props) {
  if (check_dev(dev)) return MESH_ABI_INVALID_ARGUMENT;
  struct props p;
  common_props(&p);
  FILL_COMMON(props, p);
  props->forceFlush = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = (size_t)1 << 30;
  props->maxCollBytes = (size_t)1 << 30;
  props->maxMultiRequestSize = 1;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_listen(int dev, void *handle, void **listen_comm) {
  char err[MESH_ERRLEN];
  *listen_comm = NULL;
  if (check_dev(dev)) return MESH_ABI_INVALID_ARGUMENT;
  struct mesh_listen *l = calloc(1, sizeof(*l));
  if (l == NULL) return MESH_ABI_SYSTEM_ERROR;
  l->backend = g_backend;
  l->nsocks = g_backend == MESH_BACKEND_TCP ? g_cfg.nsocks : 1;
  struct mesh_handle h;
  memset(&h, 0, sizeof(h));
  h.backend = (uint8_t)g_backend;
  h.nsocks = (uint8_t)l->nsocks;
  h.nonce = mesh_random64();
  h.node_addr = g_cfg.node_addr;
  if (g_backend == MESH_BACKEND_TCP) {
    for (int i = 0; i < g_nifs && h.naddrs < MESH_HANDLE_MAX_ADDRS; i++) {
      h.addrs[h.naddrs] = g_ifs[i].addr;
      h.prefixes[h.naddrs++] = (uint8_t)g_ifs[i].prefix;
    }
  } else {
    for (int i = 0; i < g_nnics && h.naddrs < MESH_HANDLE_MAX_ADDRS; i++) {
      if (g_nics[i].prefix < 0) continue;
      int dup = 0;
      for (int k = 0; k < h.naddrs; k++) dup |= h.addrs[k] == g_nics[i].addr;
      if (dup) continue;
      h.addrs[h.naddrs] = g_nics[i].addr;
      h.prefixes[h.naddrs++] = (uint8_t)g_nics[i].prefix;
    }
  }
  if (mesh_acceptor_open(&l->acc, h.nonce, err, sizeof(err)) != 0) {
    mesh_warn("listen: %s", err);
    free(l);
    return MESH_ABI_SYSTEM_ERROR;
  }
  h.port = l->acc.port;
  if (mesh_handle_pack(&h, handle, MESH_ABI_HANDLE_MAXSIZE, err, sizeof(err)) != 0) {
    mesh_warn("listen: %s", err);
    mesh_acceptor_close(&l->acc);
    free(l);
    return MESH_ABI_INTERNAL_ERROR;
  }
  mesh_info("listening on port %u (%s, %d addresses in the handle)", h.port, mesh_backend_name(g_backend), h.naddrs);
  *listen_comm = l;
  return MESH_ABI_SUCCESS;
}

static void peer_list(const struct mesh_handle *h, char *out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < h->naddrs; i++) {
    char s[MESH_STR];
    mesh_subnet_str(h->addrs[i], h->prefixes[i], s, sizeof(s));
    char a[MESH_STR];
    mesh_ipv4_str(h->addrs[i], a, sizeof(a));
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s (subnet %s)", i ? ", " : "", a, s);
  }
  char n[MESH_STR] = "none";
  if (h->node_addr) mesh_ipv4_str(h->node_addr, n, sizeof(n));
  size_t used = strlen(out);
  snprintf(out + used, len - used, "; node address %s", n);
}

static struct mesh_cable_opts cable_opts(void) {
  struct mesh_cable_opts o = {g_cfg.cable_timeout_ms, g_cfg.sysfs_root};
  return o;
}

static struct mesh_comm *new_comm(int is_send) {
  struct mesh_comm *c = calloc(1, sizeof(*c));
  if (c) {
    c->backend = g_backend;
    c->is_send = is_send;
  }
  return c;
}

static mesh_abi_result_t do_connect(int dev, void *handle, void **send_comm) {
  char err[MESH_ERRLEN], desc[MESH_ERRLEN];
  *send_comm = NULL;
  if (check_dev(dev)) return MESH_ABI_INVALID_ARGUMENT;
  struct mesh_connect_state *st = NULL;
  memcpy(&st, (char *)handle + MESH_HANDLE_STATE_OFFSET, sizeof(st));
  if (st == NULL) {
    struct mesh_handle h;
    if (mesh_handle_unpack(handle, MESH_ABI_HANDLE_MAXSIZE, &h, err, sizeof(err)) != 0) {
      mesh_warn("connect: %s", err);
      return MESH_ABI_INTERNAL_ERROR;
    }
    char peers[1024];
    peer_list(&h, peers, sizeof(peers));
    if (h.backend != g_backend) {
      mesh_warn("connect: the peer (%s) uses the %s backend, this rank %s: set NCCL_MESH_TRANSPORT alike on all nodes",
                peers, mesh_backend_name(h.backend), mesh_backend_name(g_backend));
      return MESH_ABI_INVALID_USAGE;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) return MESH_ABI_SYSTEM_ERROR;
    st->backend = g_backend;
    int nsocks = h.nsocks;
    if (g_backend == MESH_BACKEND_TCP) {
      if (mesh_plan_tcp(g_ifs, g_nifs, &h, g_cfg.node_addr, &st->plan) == MESH_PLAN_NONE) {
        char locals[1024];
        list_locals(locals, sizeof(locals));
        mesh_warn("connect: no local address shares a subnet with the peer's addresses %s (local: %s; "
                  "NIC -, GID -): no cable faces the peer and it advertises no node address; check NCCL_MESH_IFNAME "
                  "and the addressing, or set NCCL_MESH_NODE_ADDR on every node to reach non-neighbours over the "
                  "routed cables",
                  peers, locals);
        free(st);
        return MESH_ABI_SYSTEM_ERROR;
      }
      nsocks = mesh_rail_sockets(h.nsocks, st->plan.nroutes);
    } else {
      int ni[MESH_MAX_NICS], pi[MESH_MAX_NICS];
      int n = mesh_nic_rails(g_nics, g_nnics, h.addrs, h.naddrs, ni, pi, MESH_MAX_NICS);
      if (n == 0) {
        char nics[1024];
        list_nics(nics, sizeof(nics));
        mesh_warn("connect: the verbs backend reaches only peers it shares a cable with, and no RoCE port of this "
                  "node is on a subnet of the peer's addresses %s (this node's RoCE ports: %s). Cable the two "
                  "nodes, order the ranks along the cabling so that NCCL's rings join neighbours only "
                  "(NCCL_ALGO=Ring), or run NCCL_MESH_TRANSPORT=tcp, which reaches non-neighbours at their node "
                  "address; NCCL_MESH_GID_INDEX picks another GID",
                  peers, nics);
        free(st);
        return MESH_ABI_SYSTEM_ERROR;
      }
      int k = (int)(mesh_rail_next(h.addrs[0]) % (unsigned)n);
      st->nic = g_nics[ni[k]];
      struct mesh_route *r = &st->plan.routes[0];
      st->plan.kind = MESH_PLAN_DIRECT;
      st->plan.nroutes = 1;
      r->local = st->nic.addr;
      r->prefix = st->nic.prefix;
      r->peer = h.addrs[pi[k]];
      snprintf(r->ifname, sizeof(r->ifname), "%s", st->nic.netdev);
      if (n > 1) mesh_info("connect: %d NICs face the peer %s: this connection takes rail %d", n, peers, k + 1);
    }
    if (mesh_connector_start(&st->conn, st->plan.routes, st->plan.nroutes, h.port, h.nonce, nsocks,
                             g_cfg.connect_timeout_ms, err, sizeof(err)) != 0) {
      mesh_warn("connect: %s", err);
      free(st);
      return MESH_ABI_SYSTEM_ERROR;
    }
    if (g_backend == MESH_BACKEND_VERBS) {
      mesh_route_desc(&st->plan.routes[0], st->nic.dev, st->nic.gid_text, desc, sizeof(desc));
      mesh_info("connect: %s, port %u", desc, h.port);
    } else if (st->plan.kind == MESH_PLAN_NODE) {
      mesh_route_desc(&st->plan.routes[0], NULL, NULL, desc, sizeof(desc));
      mesh_info("connect: no cable faces the peer (%s): TCP to its node address over the routed cables: %s, port "
                "%u, %d sockets",
                peers, desc, h.port, nsocks);
    } else {
      mesh_routes_desc(st->plan.routes, st->plan.nroutes, desc, sizeof(desc));
      mesh_info("connect: %s, port %u, %d sockets over %d cable%s", desc, h.port, nsocks, st->plan.nroutes,
                st->plan.nroutes > 1 ? "s (rails)" : "");
    }
    memcpy((char *)handle + MESH_HANDLE_STATE_OFFSET, &st, sizeof(st));
  }
  mesh_abi_result_t rc = MESH_ABI_SUCCESS;
  if (st->vc == NULL) {
    int p = mesh_connector_progress(&st->conn, err, sizeof(err));
    if (p < 0) {
      mesh_warn("connect: %s", err);
      rc = MESH_ABI_SYSTEM_ERROR;
      goto finish;
    }
    if (p == 0) return MESH_ABI_SUCCESS;
    if (st->backend == MESH_BACKEND_TCP) {
      mesh_routes_desc(st->plan.routes, st->plan.nroutes, desc, sizeof(desc));
      struct mesh_route routes[MESH_MAX_SOCKS];
      for (int i = 0; i < st->conn.nsocks; i++) routes[i] = st->conn.routes[i % st->conn.nroutes];
      struct mesh_cable_opts opts = cable_opts();
      struct mesh_comm *c = new_comm(1);
      if (c) c->tcp = mesh_tcp_comm_create(1, st->conn.fds, routes, st->conn.nsocks, desc, &opts, err, sizeof(err));
      if (c == NULL || c->tcp == NULL) {
        mesh_warn("connect: %s", c ? err : "out of memory");
        free(c);
        rc = MESH_ABI_SYSTEM_ERROR;
        goto finish;
      }
      for (int i = 0; i < st->conn.nsocks; i++) st->conn.fds[i] = -1; /* the comm owns them now */
      *send_comm = c;
      goto finish;
    }
    st->vc = mesh_verbs_conn_start(1, st->conn.fds[0], &st->nic, &st->plan.routes[0], g_cfg.traffic_class,
                                   g_cfg.cable_timeout_ms, err, sizeof(err));
    if (st->vc == NULL) {
      mesh_warn("connect: %s", err);
      rc = MESH_ABI_SYSTEM_ERROR;
      goto finish;
    }
    st->conn.fds[0] = -1; /* owned by the verbs connection */
  }
  struct mesh_verbs_comm *vcomm = NULL;
  int p = mesh_verbs_conn_progress(st->vc, &vcomm, err, sizeof(err));
  if (p == 0) return MESH_ABI_SUCCESS;
  st->vc = NULL; /* freed by progress on success and on failure */
  if (p < 0) {
    mesh_warn("connect: %s", err);
    rc = MESH_ABI_SYSTEM_ERROR;
    goto finish;
  }
  struct mesh_comm *c = new_comm(1);
  if (c == NULL) {
    mesh_verbs_comm_destroy(vcomm);
    rc = MESH_ABI_SYSTEM_ERROR;
    goto finish;
  }
  c->verbs = vcomm;
  *send_comm = c;
finish:
  mesh_connector_abort(&st->conn);
  if (st->vc) mesh_verbs_conn_abort(st->vc);
  free(st);
  memset((char *)handle + MESH_HANDLE_STATE_OFFSET, 0, sizeof(st));
  return rc;
}

static void route_of_socket(int fd, struct mesh_route *r) {
  struct sockaddr_in a;
  socklen_t sl = sizeof(a);
  memset(r, 0, sizeof(*r));
  r->prefix = -1;
  if (getsockname(fd, (struct sockaddr *)&a, &sl) == 0) r->local = ntohl(a.sin_addr.s_addr);
  sl = sizeof(a);
  if (getpeername(fd, (struct sockaddr *)&a, &sl) == 0) r->peer = ntohl(a.sin_addr.s_addr);
  r->via_node = g_cfg.node_addr != 0 && r->local == g_cfg.node_addr;
  for (int i = 0; i < g_nifs; i++) {
    if (g_ifs[i].addr == r->local) {
      r->prefix = g_ifs[i].prefix;
      snprintf(r->ifname, sizeof(r->ifname), "%s", g_ifs[i].name);
    }
  }
}

static mesh_abi_result_t do_accept(void *listen_comm, void **recv_comm) {
  struct mesh_listen *l = listen_comm;
  char err[MESH_ERRLEN], desc[MESH_ERRLEN];
  *recv_comm = NULL;
  if (l->vc == NULL) {
    int p = mesh_acceptor_progress(&l->acc, err, sizeof(err));
    if (p < 0) {
      mesh_warn("accept: %s", err);
      return MESH_ABI_SYSTEM_ERROR;
    }
    if (p == 0) return MESH_ABI_SUCCESS;
    int fds[MESH_MAX_SOCKS], n = 0;
    mesh_acceptor_take(&l->acc, fds, &n);
    struct mesh_route route;
    route_of_socket(fds[0], &route);
    if (l->backend == MESH_BACKEND_TCP) {
      struct mesh_route routes[MESH_MAX_SOCKS], per_sock[MESH_MAX_SOCKS];
      int nr = 0;
      for (int i = 0; i < n; i++) { /* one entry per cable the sockets came in on */
        route_of_socket(fds[i], &per_sock[i]);
        int dup = 0;
        for (int k = 0; k < nr; k++) dup |= routes[k].local == per_sock[i].local && routes[k].peer == per_sock[i].peer;
        if (!dup) routes[nr++] = per_sock[i];
      }
      mesh_routes_desc(routes, nr, desc, sizeof(desc));
      mesh_info("accept: %s, %d sockets over %d route%s", desc, n, nr, nr > 1 ? "s" : "");
      struct mesh_cable_opts opts = cable_opts();
      struct mesh_comm *c = new_comm(0);
      if (c) c->tcp = mesh_tcp_comm_create(0, fds, per_sock, n, desc, &opts, err, sizeof(err));
      if (c == NULL || c->tcp == NULL) {
        mesh_warn("accept: %s", c ? err : "out of memory");
        free(c);
        for (int i = 0; i < n; i++) close(fds[i]);
        return MESH_ABI_SYSTEM_ERROR;
      }
      *recv_comm = c;
      return MESH_ABI_SUCCESS;
    }
    /* verbs: the NIC that holds the address the connection arrived on, else one on the peer's subnet */
    int ni = -1, pi = 0;
    for (int i = 0; i < g_nnics && ni < 0; i++)
      if (g_nics[i].addr == route.local) ni = i;
    if (ni < 0 && mesh_nic_rails(g_nics, g_nnics, &route.peer, 1, &ni, &pi, 1) == 0) ni = -1;
    if (ni < 0) {
      mesh_route_desc(&route, NULL, NULL, desc, sizeof(desc));
      mesh_warn("accept: no RDMA NIC has a RoCE v2 GID on the subnet of the connection (%s)", desc);
      close(fds[0]);
      return MESH_ABI_SYSTEM_ERROR;
    }
    route.prefix = g_nics[ni].prefix;
    snprintf(route.ifname, sizeof(route.ifname), "%s", g_nics[ni].netdev);
    l->vc = mesh_verbs_conn_start(0, fds[0], &g_nics[ni], &route, g_cfg.traffic_class, g_cfg.cable_timeout_ms, err,
                                  sizeof(err));
    if (l->vc == NULL) {
      mesh_warn("accept: %s", err);
      close(fds[0]);
      return MESH_ABI_SYSTEM_ERROR;
    }
  }
  struct mesh_verbs_comm *vcomm = NULL;
  int p = mesh_verbs_conn_progress(l->vc, &vcomm, err, sizeof(err));
  if (p == 0) return MESH_ABI_SUCCESS;
  l->vc = NULL;
  if (p < 0) {
    mesh_warn("accept: %s", err);
    return MESH_ABI_SYSTEM_ERROR;
  }
  struct mesh_comm *c = new_comm(0);
  if (c == NULL) {
    mesh_verbs_comm_destroy(vcomm);
    return MESH_ABI_SYSTEM_ERROR;
  }
  c->verbs = vcomm;
  *recv_comm = c;
  return MESH_ABI_SUCCESS;
}

static int g_tcp_mr_token;

static mesh_abi_result_t do_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  struct mesh_comm *c = comm;
  char err[MESH_ERRLEN];
  *mhandle = NULL;
  if (type != MESH_ABI_PTR_HOST) {
    mesh_warn("regMr: memory type %d; the Mesh plugin registers host memory only", type);
    return MESH_ABI_INVALID_ARGUMENT;
  }
  if (c->backend == MESH_BACKEND_TCP) {
    *mhandle = &g_tcp_mr_token;
    return MESH_ABI_SUCCESS;
  }
  struct mesh_verbs_mr *mr = NULL;
  if (mesh_verbs_reg_mr(c->verbs, data, size, &mr, err, sizeof(err)) != 0) {
    mesh_warn("regMr: %s", err);
    return MESH_ABI_SYSTEM_ERROR;
  }
  *mhandle = mr;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                          void **mhandle) {
  (void)comm, (void)data, (void)size, (void)type, (void)offset, (void)fd;
  *mhandle = NULL;
  mesh_warn("regMrDmaBuf: DMA-BUF registration is not supported (ptrSupport is host only)");
  return MESH_ABI_INVALID_USAGE;
}

static mesh_abi_result_t do_dereg_mr(void *comm, void *mhandle) {
  struct mesh_comm *c = comm;
  if (c->backend == MESH_BACKEND_VERBS) mesh_verbs_dereg_mr(c->verbs, mhandle);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t post(struct mesh_comm *c, void *data, size_t size, int tag, void *mhandle, void **request) {
  char err[MESH_ERRLEN];
  *request = NULL;
  int rc;
  if (c->backend == MESH_BACKEND_TCP) {
    struct mesh_tcp_request *r = NULL;
    rc = mesh_tcp_post(c->tcp, data, size, tag, &r);
    if (rc != 0) {
      char why[MESH_ERRLEN];
      mesh_tcp_comm_error(c->tcp, why, sizeof(why));
      snprintf(err, sizeof(err), "the connection failed before: %s", why);
    }
    *request = r;
  } else {
    struct mesh_verbs_request *r = NULL;
    rc = mesh_verbs_post(c->verbs, data, size, mhandle, &r, err, sizeof(err));
    *request = r;
  }
  if (rc != 0) {
    mesh_warn("%s of %zu bytes: %s", c->is_send ? "isend" : "irecv", size, err);
    return MESH_ABI_SYSTEM_ERROR;
  }
  if (*request) mesh_trace("%s %zu bytes tag %d", c->is_send ? "isend" : "irecv", size, tag);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void **request) {
  return post(send_comm, data, size, tag, mhandle, request);
}

static mesh_abi_result_t do_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                  void **request) {
  if (n != 1) {
    mesh_warn("irecv of %d buffers; the plugin announced maxRecvs=1", n);
    return MESH_ABI_INVALID_ARGUMENT;
  }
  return post(recv_comm, data[0], sizes[0], tags ? tags[0] : 0, mhandles ? mhandles[0] : NULL, request);
}

static mesh_abi_result_t do_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                                   void **request) {
  /* Host memory only: nothing to flush. */
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_test(void *request, int *done, int *sizes) {
  char err[MESH_ERRLEN];
  size_t size = 0;
  int rc = g_backend == MESH_BACKEND_TCP ? mesh_tcp_test(request, done, &size, err, sizeof(err))
                                         : mesh_verbs_test(request, done, &size, err, sizeof(err));
  if (rc != 0) {
    mesh_warn("test: %s", err);
    return MESH_ABI_REMOTE_ERROR;
  }
  if (*done && sizes) *sizes = size > INT_MAX ? INT_MAX : (int)size;
  if (*done) mesh_trace("request done, %zu bytes", size);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_close(void *comm) {
  struct mesh_comm *c = comm;
  if (c == NULL) return MESH_ABI_SUCCESS;
  if (c->backend == MESH_BACKEND_TCP) mesh_tcp_comm_destroy(c->tcp);
  else mesh_verbs_comm_destroy(c->verbs);
  free(c);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_close_listen(void *listen_comm) {
  struct mesh_listen *l = listen_comm;
  if (l == NULL) return MESH_ABI_SUCCESS;
  mesh_acceptor_close(&l->acc);
  if (l->vc) mesh_verbs_conn_abort(l->vc);
  free(l);
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_get_device_mr(void *comm, void *mhandle, void **dptr) {
  (void)comm, (void)mhandle;
  *dptr = NULL;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_irecv_consumed(void *recv_comm, int n, void *request) {
  (void)recv_comm, (void)n, (void)request;
  return MESH_ABI_SUCCESS;
}

static mesh_abi_result_t do_make_vdevice(int *d, mesh_abi_vdevice_props_t *props) {
  if (props == NULL || props->ndevs != 1 || props->devs[0] != 0) {
    mesh_warn("makeVDevice: the Mesh plugin has one device and merges none");
    return MESH_ABI_INVALID_USAGE;
  }
  *d = 0;
  return MESH_ABI_SUCCESS;
}

/* ---- version adapters ---- */
static mesh_abi_result_t init_v8(mesh_abi_logger_t logger) { return do_init(logger); }
static mesh_abi_result_t init_v10(mesh_abi_logger_t logger, mesh_abi_profiler_t prof) {
  (void)prof;
  return do_init(logger);
}
static mesh_abi_result_t init_v11(void **ctx, uint64_t comm_id, mesh_abi_comm_config_t *config,
                                  mesh_abi_logger_t logger, mesh_abi_profiler_t prof) {
  (void)comm_id, (void)prof;
  mesh_abi_result_t rc = do_init(logger);
  if (rc == MESH_ABI_SUCCESS && config != NULL && config->trafficClass != MESH_ABI_TRAFFIC_CLASS_UNDEF &&
      g_cfg.traffic_class < 0) {
    pthread_mutex_lock(&g_mu);
    g_cfg.traffic_class = config->trafficClass;
    pthread_mutex_unlock(&g_mu);
  }
  *ctx = &g_ctx_token;
  return rc;
}
static mesh_abi_result_t connect_v8(int dev, void *handle, void **send_comm, mesh_abi_device_handle_t **send_dev) {
  (void)send_dev;
  return do_connect(dev, handle, send_comm);
}
static mesh_abi_result_t connect_v10(int dev, mesh_abi_comm_config_t *config, void *handle, void **send_comm,
                                     mesh_abi_device_handle_t **send_dev) {
  (void)config, (void)send_dev;
  return do_connect(dev, handle, send_comm);
}
static mesh_abi_result_t connect_v11(void *ctx, int dev, void *handle, void **send_comm,
                                     mesh_abi_device_handle_t **send_dev) {
  (void)ctx, (void)send_dev;
  return do_connect(dev, handle, send_comm);
}
static mesh_abi_result_t listen_v11(void *ctx, int dev, void *handle, void **listen_comm) {
  (void)ctx;
  return do_listen(dev, handle, listen_comm);
}
static mesh_abi_result_t accept_any(void *listen_comm, void **recv_comm, mesh_abi_device_handle_t **recv_dev) {
  (void)recv_dev;
  return do_accept(listen_comm, recv_comm);
}
static mesh_abi_result_t isend_v8(void *send_comm, void *data, int size, int tag, void *mhandle, void **request) {
  if (size < 0) {
    mesh_warn("isend of a negative size (%d)", size);
    return MESH_ABI_INVALID_ARGUMENT;
  }
  return do_isend(send_comm, data, (size_t)size, tag, mhandle, request);
}
static mesh_abi_result_t irecv_v8(void *recv_comm, int n, void **data, int *sizes, int *tags, void **mhandles,
                                  void **request) {
  if (n != 1 || sizes[0] < 0) {
    mesh_warn("irecv of %d buffers (size %d); the plugin announced maxRecvs=1", n, n > 0 ? sizes[0] : 0);
    return MESH_ABI_INVALID_ARGUMENT;
  }
  size_t s = (size_t)sizes[0];
  return do_irecv(recv_comm, 1, data, &s, tags, mhandles, request);
}
static mesh_abi_result_t isend_v10(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                                   void **request) {
  (void)phandle;
  return do_isend(send_comm, data, size, tag, mhandle, request);
}
static mesh_abi_result_t irecv_v10(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                   void **phandles, void **request) {
  (void)phandles;
  return do_irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}
static mesh_abi_result_t finalize_v11(void *ctx) {
  (void)ctx;
  return MESH_ABI_SUCCESS;
}
static mesh_abi_result_t set_net_attr_v11(void *ctx, mesh_abi_net_attr_t *attr) {
  (void)ctx, (void)attr;
  return MESH_ABI_SUCCESS;
}

EXPORT const mesh_abi_net_v8_t ncclNetPlugin_v8 = {
    .name = MESH_PLUGIN_NAME, .init = init_v8, .devices = do_devices, .getProperties = props_v8,
    .listen = do_listen, .connect = connect_v8, .accept = accept_any, .regMr = do_reg_mr,
    .regMrDmaBuf = do_reg_mr_dmabuf, .deregMr = do_dereg_mr, .isend = isend_v8, .irecv = irecv_v8,
    .iflush = do_iflush, .test = do_test, .closeSend = do_close, .closeRecv = do_close,
    .closeListen = do_close_listen, .getDeviceMr = do_get_device_mr, .irecvConsumed = do_irecv_consumed,
};

EXPORT const mesh_abi_net_v9_t ncclNetPlugin_v9 = {
    .name = MESH_PLUGIN_NAME, .init = init_v8, .devices = do_devices, .getProperties = props_v9,
    .listen = do_listen, .connect = connect_v8, .accept = accept_any, .regMr = do_reg_mr,
    .regMrDmaBuf = do_reg_mr_dmabuf, .deregMr = do_dereg_mr, .isend = do_isend, .irecv = do_irecv,
    .iflush = do_iflush, .test = do_test, .closeSend = do_close, .closeRecv = do_close,
    .closeListen = do_close_listen, .getDeviceMr = do_get_device_mr, .irecvConsumed = do_irecv_consumed,
    .makeVDevice = do_make_vdevice,
};

EXPORT const mesh_abi_net_v10_t ncclNetPlugin_v10 = {
    .name = MESH_PLUGIN_NAME, .init = init_v10, .devices = do_devices, .getProperties = props_v9,
    .listen = do_listen, .connect = connect_v10, .accept = accept_any, .regMr = do_reg_mr,
    .regMrDmaBuf = do_reg_mr_dmabuf, .deregMr = do_dereg_mr, .isend = isend_v10, .irecv = irecv_v10,
    .iflush = do_iflush, .test = do_test, .closeSend = do_close, .closeRecv = do_close,
    .closeListen = do_close_listen, .getDeviceMr = do_get_device_mr, .irecvConsumed = do_irecv_consumed,
    .makeVDevice = do_make_vdevice,
};

EXPORT const mesh_abi_net_v11_t ncclNetPlugin_v11 = {
    .name = MESH_PLUGIN_NAME, .init = init_v11, .devices = do_devices, .getProperties = props_v11,
    .listen = listen_v11, .connect = connect_v11, .accept = accept_any, .regMr = do_reg_mr,
    .regMrDmaBuf = do_reg_mr_dmabuf, .deregMr = do_dereg_mr, .isend = isend_v10, .irecv = irecv_v10,
    .iflush = do_iflush, .test = do_test, .closeSend = do_close, .closeRecv = do_close,
    .closeListen = do_close_listen, .getDeviceMr = do_get_device_mr, .irecvConsumed = do_irecv_consumed,
    .makeVDevice = do_make_vdevice, .finalize = finalize_v11, .setNetAttr = set_net_attr_v11,
};
