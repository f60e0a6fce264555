/* SPDX-License-Identifier: GPL-3.0-or-later
 * mesh.h: internal interface of the Mesh NCCL net plugin (one implementation behind ABI v8..v11).
 */
#ifndef MESH_H
#define MESH_H

#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "mesh_abi.h"

#define MESH_PLUGIN_NAME "Mesh"
#define MESH_MAX_IFADDRS 64
#define MESH_MAX_SOCKS 16
#define MESH_STR 64     /* an address, subnet, NIC or GID text */
#define MESH_ERRLEN 512 /* an error message */

/* ---- configuration (environment) and logging: log.c ---- */
enum mesh_transport { MESH_TRANSPORT_AUTO = 0, MESH_TRANSPORT_TCP = 1, MESH_TRANSPORT_VERBS = 2 };

struct mesh_config {
  enum mesh_transport transport; /* NCCL_MESH_TRANSPORT: auto | tcp | verbs */
  int nsocks;                    /* NCCL_MESH_NSOCKS: sockets per TCP connection, 1..MESH_MAX_SOCKS */
  int debug;                     /* NCCL_MESH_DEBUG: 0 errors, 1 connection choices, 2 every request */
  int gid_index;                 /* NCCL_MESH_GID_INDEX, -1 = automatic */
  int traffic_class;             /* NCCL_MESH_TC, else NCCL_IB_TC, else -1 */
  int connect_timeout_ms;        /* NCCL_MESH_CONNECT_TIMEOUT_MS */
  int cable_timeout_ms;          /* NCCL_MESH_CABLE_TIMEOUT_MS: a lost cable ends its connections, 0 = never */
  uint32_t node_addr;            /* NCCL_MESH_NODE_ADDR: this node's routed address, 0 = none */
  char ifname[256];              /* NCCL_MESH_IFNAME: interface filter (NCCL_SOCKET_IFNAME syntax) */
  char sysfs_root[256];          /* NCCL_MESH_SYSFS_ROOT (tests), default /sys */
};

/* Reads the environment; returns 0, or -1 with err filled for a bad value. */
int mesh_config_load(struct mesh_config *cfg, char *err, size_t errlen);

void mesh_log_set_logger(mesh_abi_logger_t logger, int debug);
void mesh_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mesh_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mesh_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- IPv4 addresses and subnets: subnet.c (addresses in host byte order) ---- */
struct mesh_ifaddr {
  char name[IF_NAMESIZE];
  uint32_t addr;
  int prefix;
};

int mesh_ipv4_parse(const char *text, uint32_t *addr);
void mesh_ipv4_str(uint32_t addr, char *out, size_t len);
void mesh_subnet_str(uint32_t addr, int prefix, char *out, size_t len);
uint32_t mesh_prefix_mask(int prefix);
int mesh_subnet_contains(uint32_t net_addr, int prefix, uint32_t addr);
/* NCCL_SOCKET_IFNAME-style filter: "eth,ib" prefixes, "=eth0" exact, "^lo" excludes; empty matches
 * every interface but loopback. */
int mesh_ifname_matches(const char *filter, const char *name, int is_loopback);
/* The host's IPv4 addresses that pass the filter (no /32: a host route holds no peer). */
int mesh_if_list(const char *filter, struct mesh_ifaddr *out, int max);
/* The cables that face a peer: every (local, peer address) pair whose local subnet holds the peer's
 * address, at the longest such prefix (a cable's /30 beats a management /24 both nodes share); each local
 * address and each peer address used once, in local order.  Several pairs are rails (one subnet per cable).
 * Returns how many (0: no cable in common), at most max. */
int mesh_choose_rails(const struct mesh_ifaddr *locals, int nlocal, const uint32_t *peers, int npeer,
                      int *local_idx, int *peer_idx, int max);
/* 1 when this host holds addr (bind succeeds), 0 when not. */
int mesh_addr_is_local(uint32_t addr);
/* The prefix length of a local address, -1 when the host does not hold it. */
int mesh_if_prefix_of(const struct mesh_ifaddr *locals, int nlocal, uint32_t addr);

/* ---- the connect handle: handle.c ---- */
#define MESH_HANDLE_MAX_ADDRS 16
#define MESH_HANDLE_WIRE_BYTES 104
#define MESH_HANDLE_STATE_OFFSET 120 /* the connector keeps its progress pointer here */
enum mesh_backend { MESH_BACKEND_TCP = 1, MESH_BACKEND_VERBS = 2 };

struct mesh_handle {
  uint8_t backend;
  uint8_t nsocks;
  uint16_t port;
  uint8_t naddrs;
  uint32_t addrs[MESH_HANDLE_MAX_ADDRS];
  uint8_t prefixes[MESH_HANDLE_MAX_ADDRS];
  uint64_t nonce;
  uint32_t node_addr; /* the listener's NCCL_MESH_NODE_ADDR, 0 = none */
};

int mesh_handle_pack(const struct mesh_handle *h, void *buf, size_t buflen, char *err, size_t errlen);
int mesh_handle_unpack(const void *buf, size_t buflen, struct mesh_handle *h, char *err, size_t errlen);
const char *mesh_backend_name(int backend);

/* ---- connection set-up over TCP (both backends): sock.c ---- */
#define MESH_HELLO_BYTES 32
struct mesh_route {
  uint32_t local;  /* our address on the chosen subnet (node routes: our node address, 0 = the kernel's choice) */
  uint32_t peer;   /* the peer's address on it (node routes: its node address) */
  int prefix;
  char ifname[IF_NAMESIZE];
  int via_node;    /* 1: no cable in common, the peer's node address over the routed data cables */
};
/* "peer 10.1.0.2, NIC eth1 (10.1.0.1), GID -, subnet 10.1.0.0/30": every error carries it.  A node route
 * reads "peer 10.255.0.3 (node address, routed), from 10.255.0.1, GID -, subnet -". */
void mesh_route_desc(const struct mesh_route *r, const char *nic, const char *gid, char *out, size_t len);
/* Several routes, "; "-separated (rails). */
void mesh_routes_desc(const struct mesh_route *r, int n, char *out, size_t len);

/* How the TCP backend reaches a peer. */
enum mesh_plan_kind { MESH_PLAN_NONE = 0, MESH_PLAN_DIRECT = 1, MESH_PLAN_NODE = 2 };
struct mesh_plan {
  int kind;
  int nroutes; /* DIRECT: the rails; NODE: 1 */
  struct mesh_route routes[MESH_MAX_SOCKS];
};
/* DIRECT over every cable that faces the peer; NODE to the peer's node address when no cable faces it
 * (or, with node addresses at both ends, when only a subnet wider than this node's narrowest one holds
 * the peer: a shared network such as management, not a cable); NONE when neither. */
int mesh_plan_tcp(const struct mesh_ifaddr *locals, int nlocal, const struct mesh_handle *peer, uint32_t own_node,
                  struct mesh_plan *plan);
/* verbs rails: 0, 1, 2, ... for successive connections to the peer whose first address is key. */
unsigned mesh_rail_next(uint32_t key);
/* Sockets per connection over n routes: nsocks rounded up to a multiple of n (each cable an equal share),
 * at most MESH_MAX_SOCKS. */
int mesh_rail_sockets(int nsocks, int nroutes);

enum mesh_sock_stage { MESH_SOCK_CONNECTING = 0, MESH_SOCK_HELLO = 1, MESH_SOCK_DONE = 2 };

struct mesh_connector {
  struct mesh_route routes[MESH_MAX_SOCKS]; /* socket i goes over routes[i % nroutes] */
  int nroutes;
  uint16_t port;
  uint64_t nonce;
  uint64_t conn_id;
  int nsocks;
  int fds[MESH_MAX_SOCKS];
  int stage[MESH_MAX_SOCKS];
  size_t sent[MESH_MAX_SOCKS];
  uint8_t hello[MESH_MAX_SOCKS][MESH_HELLO_BYTES];
  int64_t deadline_ms;
  int64_t retry_at_ms[MESH_MAX_SOCKS];
  int attempts;
};

/* Starts nsocks non-blocking connections, socket i from routes[i % nroutes].local to its .peer:port. */
int mesh_connector_start(struct mesh_connector *c, const struct mesh_route *routes, int nroutes, uint16_t port,
                         uint64_t nonce, int nsocks, int timeout_ms, char *err, size_t errlen);
/* 1: every socket connected and greeted; 0: call again; -1: failed (err says why). */
int mesh_connector_progress(struct mesh_connector *c, char *err, size_t errlen);
void mesh_connector_abort(struct mesh_connector *c);

#define MESH_MAX_PENDING 64
struct mesh_pending {
  int fd;
  size_t got;
  uint8_t buf[MESH_HELLO_BYTES];
};
struct mesh_acceptor {
  int listen_fd;
  uint16_t port;
  uint64_t nonce;
  int npending;
  struct mesh_pending pending[MESH_MAX_PENDING];
  int nsocks; /* from the first hello, 0 before */
  uint64_t conn_id;
  int fds[MESH_MAX_SOCKS];
  int nready;
};
int mesh_acceptor_open(struct mesh_acceptor *a, uint64_t nonce, char *err, size_t errlen);
/* 1: a whole connection (nsocks sockets, in index order in a->fds) arrived; 0: call again; -1: error. */
int mesh_acceptor_progress(struct mesh_acceptor *a, char *err, size_t errlen);
/* Hands the finished connection's sockets over and readies the acceptor for another. */
void mesh_acceptor_take(struct mesh_acceptor *a, int *fds, int *nsocks);
void mesh_acceptor_close(struct mesh_acceptor *a);

int mesh_set_blocking(int fd, int blocking);
int64_t mesh_now_ms(void);
uint64_t mesh_random64(void);
/* Non-blocking exchange helpers: move up to len-*done bytes; 0 progress/ok, -1 error (errno set), 1 EOF. */
int mesh_send_some(int fd, const void *buf, size_t len, size_t *done);
int mesh_recv_some(int fd, void *buf, size_t len, size_t *done);

/* ---- a lost cable: cable.c ---- */
enum mesh_link { MESH_LINK_UNKNOWN = 0, MESH_LINK_UP, MESH_LINK_ADMIN_DOWN, MESH_LINK_NO_CARRIER, MESH_LINK_GONE };
/* An interface's state from its sysfs directory (present or not) and the texts of its flags (hex), operstate
 * and carrier files (NULL: unreadable, as carrier is while the interface is down). */
int mesh_link_classify(int present, const char *flags, const char *operstate, const char *carrier);
/* The state of ifname below <sysfs_root>/class/net (an address label such as eth0:1 reads eth0). */
int mesh_link_state(const char *sysfs_root, const char *ifname);
const char *mesh_link_state_text(int state);
/* "cable data1 (192.168.100.5 -> 192.168.100.6)"; a node route: "the routed path 10.255.0.1 -> 10.255.0.3
 * (node addresses)". */
void mesh_cable_name(const struct mesh_route *r, char *out, size_t len);
/* TCP keepalive that ends a socket whose peer answers nothing for timeout_ms (rounded up to whole seconds)
 * plus 2 s: idle + cnt * intvl, each at least 1 s. */
void mesh_keepalive_plan(int timeout_ms, int *idle_s, int *intvl_s, int *cnt);
int mesh_keepalive_set(int fd, int timeout_ms);
/* A condition that must hold without a break: the ms it has held so far (0 when it does not hold now). */
struct mesh_stall {
  int active;
  int64_t since_ms;
};
int64_t mesh_stall_update(struct mesh_stall *s, int bad, int64_t now_ms);
/* TCP_INFO's signs of a peer that answers nothing: a retransmission of unacknowledged data, or two window
 * probes in a row unanswered. */
int mesh_ack_silent(unsigned retransmits, unsigned probes, unsigned unacked);
/* One socket's watch: its cable's interface not up, and data without acknowledgement, each for timeout_ms. */
struct mesh_sock_watch {
  int link_watched; /* the interface was visible at the start */
  struct mesh_stall link;
  struct mesh_stall ack;
  uint64_t bytes_acked;
};
void mesh_sock_watch_start(struct mesh_sock_watch *w, const struct mesh_route *r, const char *sysfs_root);
/* 1 with why ("cable ... lost: ... for 10.0 s") when the cable counts as lost, else 0. */
int mesh_sock_watch_check(struct mesh_sock_watch *w, int fd, const struct mesh_route *r, const char *sysfs_root,
                          int timeout_ms, int64_t now_ms, char *why, size_t len);
/* What a connection's watch needs from the configuration. */
struct mesh_cable_opts {
  int timeout_ms; /* 0: no watch, no keepalive */
  const char *sysfs_root;
};

/* ---- the TCP data path: tcp.c ---- */
#define MESH_TCP_RING 64
#define MESH_TCP_MIN_SLICE (64 * 1024)
struct mesh_tcp_comm;
struct mesh_tcp_request;
/* How many slices a message of `size` bytes is cut into over nsocks sockets (1 for size 0). */
int mesh_tcp_nslices(size_t size, int nsocks);
/* Slice j of a message of `size` bytes over nsocks sockets (len 0 past the last). */
void mesh_tcp_slice(size_t size, int nsocks, int j, size_t *offset, size_t *len);
/* Socket j travels over routes[j] (named in its errors, its cable watched while a request waits). */
struct mesh_tcp_comm *mesh_tcp_comm_create(int is_send, const int *fds, const struct mesh_route *routes, int nsocks,
                                           const char *desc, const struct mesh_cable_opts *opts, char *err,
                                           size_t errlen);
/* 0 and *req (NULL when the ring is full: retry later), -1 on a broken comm. */
int mesh_tcp_post(struct mesh_tcp_comm *c, void *data, size_t size, int tag, struct mesh_tcp_request **req);
/* Why a broken comm failed. */
void mesh_tcp_comm_error(struct mesh_tcp_comm *c, char *err, size_t errlen);
/* 0 with done and size set, -1 with err when the request failed (or its connection's cable is lost). */
int mesh_tcp_test(struct mesh_tcp_request *r, int *done, size_t *size, char *err, size_t errlen);
void mesh_tcp_comm_destroy(struct mesh_tcp_comm *c);

/* ---- RDMA NICs from sysfs and the GID choice: gid.c ---- */
#define MESH_MAX_NICS 64
struct mesh_nic {
  char dev[MESH_STR]; /* mlx5_0 */
  int port;
  int gid_index;
  uint8_t gid[16];
  char gid_text[MESH_STR];
  uint32_t addr; /* the IPv4 address of the GID */
  int prefix;    /* from the host's interface list; -1 unknown */
  char netdev[IF_NAMESIZE];
  int active;
  int speed_mbps;
};
int mesh_gid_parse(const char *text, uint8_t gid[16]);
int mesh_gid_ipv4(const uint8_t gid[16], uint32_t *addr);
/* The (device, port, GID) candidates below <root>/class/infiniband: Ethernet ports, and per port the
 * RoCE v2 GIDs that hold an IPv4 address (or only gid_index when >= 0).  Returns the count; the
 * notes buffer collects why ports were left out. */
int mesh_nic_scan(const char *sysfs_root, int gid_index, const struct mesh_ifaddr *locals, int nlocal,
                  struct mesh_nic *out, int max, char *notes, size_t noteslen);
/* The NICs that face a peer (rails): entries whose subnet holds one of the peer's addresses, at the longest
 * such prefix, ACTIVE ports only when any is; each NIC address and peer address once.  Returns the count. */
int mesh_nic_rails(const struct mesh_nic *nics, int n, const uint32_t *peers, int npeer, int *nic_idx, int *peer_idx,
                   int max);

/* ---- the verbs backend: verbs.c, verbs_ops.c ---- */
struct mesh_verbs_ops;
const struct mesh_verbs_ops *mesh_verbs_real_ops(char *err, size_t errlen);
void mesh_verbs_use_ops(const struct mesh_verbs_ops *ops); /* tests inject a fake */
const struct mesh_verbs_ops *mesh_verbs_ops_in_use(void);

struct mesh_verbs_conn; /* connection set-up in progress */
struct mesh_verbs_comm; /* an established RC connection */
struct mesh_verbs_request;
struct mesh_verbs_mr;

/* Connector side: the OOB socket is connected (fd); exchange QP data with the peer. */
/* A connection whose port is not ACTIVE for cable_timeout_ms (0: never) while a request waits ends. */
struct mesh_verbs_conn *mesh_verbs_conn_start(int is_send, int fd, const struct mesh_nic *nic,
                                              const struct mesh_route *route, int traffic_class,
                                              int cable_timeout_ms, char *err, size_t errlen);
/* 1 done (*comm set), 0 again, -1 error; frees the conn on 1 and -1. */
int mesh_verbs_conn_progress(struct mesh_verbs_conn *vc, struct mesh_verbs_comm **comm, char *err, size_t errlen);
void mesh_verbs_conn_abort(struct mesh_verbs_conn *vc);
int mesh_verbs_reg_mr(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr **mr, char *err,
                      size_t errlen);
int mesh_verbs_dereg_mr(struct mesh_verbs_comm *c, struct mesh_verbs_mr *mr);
int mesh_verbs_post(struct mesh_verbs_comm *c, void *data, size_t size, struct mesh_verbs_mr *mr,
                    struct mesh_verbs_request **req, char *err, size_t errlen);
int mesh_verbs_test(struct mesh_verbs_request *r, int *done, size_t *size, char *err, size_t errlen);
void mesh_verbs_comm_destroy(struct mesh_verbs_comm *c);

#endif /* MESH_H */
