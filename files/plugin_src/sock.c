/* SPDX-License-Identifier: GPL-3.0-or-later
 * sock.c: connection set-up over TCP without blocking, as NCCL's connect/accept require.
 *
 * The connector opens nsocks sockets, socket i over route i mod nroutes (rails: one route per cable facing
 * the peer), from our address on that route to the peer's, and sends a 32-byte hello on each: "MSHH", socket index, nsocks, 0, the listener's nonce (from
 * the handle) and a connection id.  The acceptor collects sockets until one connection is whole.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mesh.h"
#include "wire.h"

#define HELLO_MAGIC "MSHH"

int64_t mesh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t mesh_random64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 16);
  }
  return v;
}

int mesh_set_blocking(int fd, int blocking) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  fl = blocking ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK);
  return fcntl(fd, F_SETFL, fl);
}

int mesh_send_some(int fd, const void *buf, size_t len, size_t *done) {
  while (*done < len) {
    ssize_t n = send(fd, (const char *)buf + *done, len - *done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      *done += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n < 0 && errno == EINTR) continue;
    return -1;
  }
  return 0;
}

int mesh_recv_some(int fd, void *buf, size_t len, size_t *done) {
  while (*done < len) {
    ssize_t n = recv(fd, (char *)buf + *done, len - *done, MSG_DONTWAIT);
    if (n > 0) {
      *done += (size_t)n;
      continue;
    }
    if (n == 0) return 1;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == EINTR) continue;
    return -1;
  }
  return 0;
}

void mesh_route_desc(const struct mesh_route *r, const char *nic, const char *gid, char *out, size_t len) {
  char peer[MESH_STR], local[MESH_STR], subnet[MESH_STR];
  mesh_ipv4_str(r->peer, peer, sizeof(peer));
  mesh_ipv4_str(r->local, local, sizeof(local));
  if (r->via_node) {
    snprintf(out, len, "peer %s (node address, routed), from %s, GID -, subnet -", peer,
             r->local ? local : "the kernel's source address");
    return;
  }
  mesh_subnet_str(r->local, r->prefix, subnet, sizeof(subnet));
  /* TCP names the interface as the NIC: say it once. */
  int same = nic && strcmp(nic, r->ifname) == 0;
  snprintf(out, len, "peer %s, NIC %s (%s%s%s), GID %s, subnet %s", peer, (nic && *nic) ? nic : "-", local,
           (r->ifname[0] && !same) ? " on " : "", same ? "" : r->ifname, (gid && *gid) ? gid : "-", subnet);
}

void mesh_routes_desc(const struct mesh_route *r, int n, char *out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    size_t used = strlen(out);
    if (used + 3 >= len) break;
    if (i) {
      snprintf(out + used, len - used, "; ");
      used += 2;
    }
    mesh_route_desc(&r[i], r[i].ifname, NULL, out + used, len - used);
  }
}

static const char *unreach_hint(const struct mesh_route *r) {
  return r->via_node ? " (the peer shares no cable with this node: check the node-address routes, ip route get)" : "";
}

static int open_one(struct mesh_connector *c, int i, char *err, size_t errlen) {
  char desc[MESH_ERRLEN];
  const struct mesh_route *route = &c->routes[i % c->nroutes];
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
    snprintf(err, errlen, "socket(): %s (%s)", strerror(errno), desc);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(route->local)};
  struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(c->port), .sin_addr.s_addr = htonl(route->peer)};
  /* Bound to the cable's address (or the node address), the socket leaves by the cable facing the peer. */
  if (route->local != 0 && bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
    mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
    snprintf(err, errlen, "bind to the local address failed: %s (%s)%s", strerror(errno), desc, unreach_hint(route));
    close(fd);
    return -1;
  }
  c->attempts++;
  if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 && errno != EINPROGRESS) {
    int e = errno;
    if (e == ECONNREFUSED || e == ENETUNREACH || e == EHOSTUNREACH) {
      close(fd);
      c->fds[i] = -1;
      c->retry_at_ms[i] = mesh_now_ms() + 20;
      return 0;
    }
    mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
    snprintf(err, errlen, "connect to port %u failed: %s (%s)%s", c->port, strerror(e), desc, unreach_hint(route));
    close(fd);
    return -1;
  }
  c->fds[i] = fd;
  c->stage[i] = MESH_SOCK_CONNECTING;
  return 0;
}

int mesh_connector_start(struct mesh_connector *c, const struct mesh_route *routes, int nroutes, uint16_t port,
                         uint64_t nonce, int nsocks, int timeout_ms, char *err, size_t errlen) {
  memset(c, 0, sizeof(*c));
  if (nroutes < 1 || nroutes > MESH_MAX_SOCKS) {
    snprintf(err, errlen, "%d routes, expected 1..%d", nroutes, MESH_MAX_SOCKS);
    return -1;
  }
  memcpy(c->routes, routes, sizeof(*routes) * (size_t)nroutes);
  c->nroutes = nroutes;
  c->port = port;
  c->nonce = nonce;
  c->conn_id = mesh_random64();
  c->nsocks = nsocks;
  c->deadline_ms = mesh_now_ms() + timeout_ms;
  for (int i = 0; i < MESH_MAX_SOCKS; i++) c->fds[i] = -1;
  if (nsocks < 1 || nsocks > MESH_MAX_SOCKS) {
    snprintf(err, errlen, "%d sockets per connection, expected 1..%d", nsocks, MESH_MAX_SOCKS);
    return -1;
  }
  for (int i = 0; i < nsocks; i++) {
    memcpy(c->hello[i], HELLO_MAGIC, 4);
    put32(c->hello[i] + 4, (uint32_t)i);
    put32(c->hello[i] + 8, (uint32_t)nsocks);
    put64(c->hello[i] + 16, nonce);
    put64(c->hello[i] + 24, c->conn_id);
    if (open_one(c, i, err, errlen) != 0) {
      mesh_connector_abort(c);
      return -1;
    }
  }
  return 0;
}

int mesh_connector_progress(struct mesh_connector *c, char *err, size_t errlen) {
  char desc[MESH_ERRLEN];
  int64_t now = mesh_now_ms();
  int done = 0;
  for (int i = 0; i < c->nsocks; i++) {
    const struct mesh_route *route = &c->routes[i % c->nroutes];
    if (c->stage[i] == MESH_SOCK_CONNECTING) {
      if (c->fds[i] < 0) {
        if (now < c->retry_at_ms[i]) goto check_deadline;
        if (open_one(c, i, err, errlen) != 0) return -1;
        if (c->fds[i] < 0) goto check_deadline;
      }
      struct pollfd p = {.fd = c->fds[i], .events = POLLOUT};
      if (poll(&p, 1, 0) <= 0) goto check_deadline;
      int soerr = 0;
      socklen_t sl = sizeof(soerr);
      getsockopt(c->fds[i], SOL_SOCKET, SO_ERROR, &soerr, &sl);
      if (soerr == ECONNREFUSED || soerr == ETIMEDOUT || soerr == EHOSTUNREACH || soerr == ENETUNREACH) {
        close(c->fds[i]);
        c->fds[i] = -1;
        c->retry_at_ms[i] = now + 20;
        if (now > c->deadline_ms) {
          mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
          snprintf(err, errlen, "connect to port %u: %s after %d attempts (%s)%s", c->port, strerror(soerr),
                   c->attempts, desc, unreach_hint(route));
          return -1;
        }
        continue;
      }
      if (soerr != 0) {
        mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
        snprintf(err, errlen, "connect to port %u: %s (%s)", c->port, strerror(soerr), desc);
        return -1;
      }
      c->stage[i] = MESH_SOCK_HELLO;
    }
    if (c->stage[i] == MESH_SOCK_HELLO) {
      if (mesh_send_some(c->fds[i], c->hello[i], MESH_HELLO_BYTES, &c->sent[i]) != 0) {
        mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
        snprintf(err, errlen, "sending the hello failed: %s (%s)", strerror(errno), desc);
        return -1;
      }
      if (c->sent[i] == MESH_HELLO_BYTES) c->stage[i] = MESH_SOCK_DONE;
    }
    if (c->stage[i] == MESH_SOCK_DONE) done++;
    continue;
  check_deadline:
    if (now > c->deadline_ms) {
      mesh_route_desc(route, NULL, NULL, desc, sizeof(desc));
      snprintf(err, errlen, "connect to port %u timed out after %d attempts (%s)%s", c->port, c->attempts, desc,
               unreach_hint(route));
      return -1;
    }
  }
  return done == c->nsocks ? 1 : 0;
}

void mesh_connector_abort(struct mesh_connector *c) {
  for (int i = 0; i < c->nsocks && i < MESH_MAX_SOCKS; i++) {
    if (c->fds[i] >= 0) close(c->fds[i]);
    c->fds[i] = -1;
  }
}

int mesh_acceptor_open(struct mesh_acceptor *a, uint64_t nonce, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->nonce = nonce;
  for (int i = 0; i < MESH_MAX_SOCKS; i++) a->fds[i] = -1;
  a->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a->listen_fd < 0) {
    snprintf(err, errlen, "socket(): %s", strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(a->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t sl = sizeof(any);
  if (bind(a->listen_fd, (struct sockaddr *)&any, sizeof(any)) != 0 || listen(a->listen_fd, 256) != 0 ||
      getsockname(a->listen_fd, (struct sockaddr *)&any, &sl) != 0) {
    snprintf(err, errlen, "listen socket: %s", strerror(errno));
    close(a->listen_fd);
    a->listen_fd = -1;
    return -1;
  }
  a->port = ntohs(any.sin_port);
  return 0;
}

static void drop_pending(struct mesh_acceptor *a, int i, int close_fd) {
  if (close_fd) close(a->pending[i].fd);
  a->pending[i] = a->pending[a->npending - 1];
  a->npending--;
}

int mesh_acceptor_progress(struct mesh_acceptor *a, char *err, size_t errlen) {
  for (;;) {
    int fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) break;
      snprintf(err, errlen, "accept on port %u: %s", a->port, strerror(errno));
      return -1;
    }
    if (a->npending == MESH_MAX_PENDING) {
      close(fd);
      snprintf(err, errlen, "more than %d unfinished connections on port %u", MESH_MAX_PENDING, a->port);
      return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    a->pending[a->npending].fd = fd;
    a->pending[a->npending].got = 0;
    a->npending++;
  }
  for (int i = 0; i < a->npending;) {
    struct mesh_pending *p = &a->pending[i];
    int rc = mesh_recv_some(p->fd, p->buf, MESH_HELLO_BYTES, &p->got);
    if (rc != 0) { /* closed or failed before its hello: not one of ours */
      drop_pending(a, i, 1);
      continue;
    }
    if (p->got < MESH_HELLO_BYTES) {
      i++;
      continue;
    }
    uint32_t index = get32(p->buf + 4), nsocks = get32(p->buf + 8);
    uint64_t nonce = get64(p->buf + 16), conn_id = get64(p->buf + 24);
    if (memcmp(p->buf, HELLO_MAGIC, 4) != 0 || nonce != a->nonce || nsocks < 1 || nsocks > MESH_MAX_SOCKS ||
        index >= nsocks) {
      mesh_warn("port %u: ignored a connection whose hello is not for this listener", a->port);
      drop_pending(a, i, 1);
      continue;
    }
    if (a->nsocks == 0) {
      a->nsocks = (int)nsocks;
      a->conn_id = conn_id;
    } else if (conn_id != a->conn_id || (int)nsocks != a->nsocks) {
      snprintf(err, errlen, "port %u: a second connector (%u sockets) arrived while one (%d sockets) is unfinished",
               a->port, nsocks, a->nsocks);
      return -1;
    }
    if (a->fds[index] >= 0) {
      snprintf(err, errlen, "port %u: socket %u of a connection arrived twice", a->port, index);
      return -1;
    }
    a->fds[index] = p->fd;
    a->nready++;
    drop_pending(a, i, 0);
  }
  return (a->nsocks > 0 && a->nready == a->nsocks) ? 1 : 0;
}

void mesh_acceptor_take(struct mesh_acceptor *a, int *fds, int *nsocks) {
  *nsocks = a->nsocks;
  for (int i = 0; i < a->nsocks; i++) {
    fds[i] = a->fds[i];
    a->fds[i] = -1;
  }
  a->nsocks = 0;
  a->nready = 0;
  a->conn_id = 0;
}

void mesh_acceptor_close(struct mesh_acceptor *a) {
  for (int i = 0; i < a->npending; i++) close(a->pending[i].fd);
  a->npending = 0;
  for (int i = 0; i < MESH_MAX_SOCKS; i++)
    if (a->fds[i] >= 0) close(a->fds[i]);
  if (a->listen_fd >= 0) close(a->listen_fd);
  a->listen_fd = -1;
}
