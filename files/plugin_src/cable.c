/* SPDX-License-Identifier: GPL-3.0-or-later
 * cable.c: telling a lost cable from a slow peer (NCCL_MESH_CABLE_TIMEOUT_MS).
 *
 * A cable set down, pulled or deleted under a TCP connection sends no RST and no FIN: the sockets just stop,
 * and TCP retransmits for about 15 minutes.  Three signs end such a connection after the bound, each naming
 * the cable (its interface, both addresses):
 *   - the interface of a socket's cable is not up (set down, no carrier, gone) for the whole bound
 *     (sysfs: flags, operstate, carrier);
 *   - a socket with data in flight gets no acknowledgement for the whole bound while TCP retransmits (or
 *     two window probes in a row go unanswered) -- TCP_INFO;
 *   - TCP keepalive, 2 s after the bound, ends a socket whose peer answers nothing (the receiving side, which
 *     has no data in flight of its own to notice it with; a rank that only receives over that cable).
 * Not TCP_USER_TIMEOUT: tcp(7) also ends a connection whose receiver leaves its window closed that long, and
 * a rank that enters a collective late while its peer has sent does exactly that; a slow peer is not a lost
 * cable.  The RDMA backend watches its port's state (verbs.c) with the same stall rule.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "mesh.h"

#define KEEPALIVE_LAG_S 2

static int read_text(const char *path, char *out, size_t len) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  int ok = fgets(out, (int)len, f) != NULL;
  fclose(f);
  if (!ok) return -1; /* carrier of an interface that is down reads EINVAL */
  out[strcspn(out, "\n")] = '\0';
  return 0;
}

int mesh_link_classify(int present, const char *flags, const char *operstate, const char *carrier) {
  if (!present) return MESH_LINK_GONE;
  if (flags == NULL && operstate == NULL) return MESH_LINK_UNKNOWN;
  if (flags != NULL && (strtoul(flags, NULL, 16) & IFF_UP) == 0) return MESH_LINK_ADMIN_DOWN;
  if (flags == NULL && carrier == NULL && operstate != NULL && strcmp(operstate, "down") == 0)
    return MESH_LINK_ADMIN_DOWN;
  if (carrier != NULL && strcmp(carrier, "0") == 0) return MESH_LINK_NO_CARRIER;
  if (operstate != NULL && (strcmp(operstate, "down") == 0 || strcmp(operstate, "lowerlayerdown") == 0 ||
                            strcmp(operstate, "notpresent") == 0))
    return MESH_LINK_NO_CARRIER;
  return MESH_LINK_UP; /* up, or unknown as lo and some virtual interfaces report */
}

int mesh_link_state(const char *sysfs_root, const char *ifname) {
  char dev[IF_NAMESIZE], dir[512], path[600], flags[32], oper[32], carrier[8];
  /* an address label (eth0:1) names its interface's directory (eth0) */
  snprintf(dev, sizeof(dev), "%.*s", (int)strcspn(ifname, ":"), ifname);
  snprintf(dir, sizeof(dir), "%s/class/net/%s", sysfs_root, dev);
  struct stat st;
  if (dev[0] == '\0' || stat(dir, &st) != 0) return mesh_link_classify(0, NULL, NULL, NULL);
  snprintf(path, sizeof(path), "%s/flags", dir);
  int have_flags = read_text(path, flags, sizeof(flags)) == 0;
  snprintf(path, sizeof(path), "%s/operstate", dir);
  int have_oper = read_text(path, oper, sizeof(oper)) == 0;
  snprintf(path, sizeof(path), "%s/carrier", dir);
  int have_carrier = read_text(path, carrier, sizeof(carrier)) == 0;
  return mesh_link_classify(1, have_flags ? flags : NULL, have_oper ? oper : NULL, have_carrier ? carrier : NULL);
}

const char *mesh_link_state_text(int state) {
  switch (state) {
    case MESH_LINK_UP: return "up";
    case MESH_LINK_ADMIN_DOWN: return "the interface is set down";
    case MESH_LINK_NO_CARRIER: return "no carrier (the far end is down or the cable is out)";
    case MESH_LINK_GONE: return "the interface is gone";
    default: return "its state is not readable";
  }
}

void mesh_cable_name(const struct mesh_route *r, char *out, size_t len) {
  char local[MESH_STR], peer[MESH_STR];
  mesh_ipv4_str(r->local, local, sizeof(local));
  mesh_ipv4_str(r->peer, peer, sizeof(peer));
  if (r->via_node)
    snprintf(out, len, "the routed path %s -> %s (node addresses)", r->local ? local : "this node", peer);
  else
    snprintf(out, len, "cable %s (%s -> %s)", r->ifname[0] ? r->ifname : "?", local, peer);
}

void mesh_keepalive_plan(int timeout_ms, int *idle_s, int *intvl_s, int *cnt) {
  /* whole seconds, KEEPALIVE_LAG_S after the bound: the watch, which can say why (no carrier, set down),
   * speaks first wherever it sees the cause */
  int total = (timeout_ms + 999) / 1000 + KEEPALIVE_LAG_S;
  *cnt = total >= 8 ? 3 : 1;
  *intvl_s = total / (2 * *cnt);
  if (*intvl_s < 1) *intvl_s = 1;
  *idle_s = total - *cnt * *intvl_s;
  if (*idle_s < 1) *idle_s = 1;
}

int mesh_keepalive_set(int fd, int timeout_ms) {
  int on = 1, idle, intvl, cnt;
  mesh_keepalive_plan(timeout_ms, &idle, &intvl, &cnt);
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) != 0)
    return -1;
  return 0;
}

int64_t mesh_stall_update(struct mesh_stall *s, int bad, int64_t now_ms) {
  if (!bad) {
    s->active = 0;
    return 0;
  }
  if (!s->active) {
    s->active = 1;
    s->since_ms = now_ms;
  }
  return now_ms - s->since_ms;
}

int mesh_ack_silent(unsigned retransmits, unsigned probes, unsigned unacked) {
  /* A live peer answers every window probe, so one may be outstanding at a time, never two. */
  return (retransmits >= 1 && unacked > 0) || probes >= 2;
}

void mesh_sock_watch_start(struct mesh_sock_watch *w, const struct mesh_route *r, const char *sysfs_root) {
  memset(w, 0, sizeof(*w));
  /* Only an interface this process sees at the start is watched: a sysfs of another network namespace
   * (nsenter without a mount namespace) must not read as a cable gone. */
  if (!r->via_node && r->ifname[0] != '\0') {
    int st = mesh_link_state(sysfs_root, r->ifname);
    w->link_watched = st != MESH_LINK_GONE && st != MESH_LINK_UNKNOWN;
  }
}

int mesh_sock_watch_check(struct mesh_sock_watch *w, int fd, const struct mesh_route *r, const char *sysfs_root,
                          int timeout_ms, int64_t now_ms, char *why, size_t len) {
  char cable[MESH_ERRLEN / 4];
  mesh_cable_name(r, cable, sizeof(cable));
  if (w->link_watched) {
    int st = mesh_link_state(sysfs_root, r->ifname);
    int bad = st != MESH_LINK_UP && st != MESH_LINK_UNKNOWN;
    int64_t held = mesh_stall_update(&w->link, bad, now_ms);
    if (bad && held >= timeout_ms) {
      snprintf(why, len, "%s lost: %s for %.1f s", cable, mesh_link_state_text(st), (double)held / 1000);
      return 1;
    }
  }
  struct tcp_info ti;
  socklen_t sl = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &sl) != 0) return 0;
  if (ti.tcpi_bytes_acked != w->bytes_acked) { /* acknowledged since the last look: alive */
    w->bytes_acked = ti.tcpi_bytes_acked;
    mesh_stall_update(&w->ack, 0, now_ms);
  }
  int bad = mesh_ack_silent(ti.tcpi_retransmits, ti.tcpi_probes, ti.tcpi_unacked);
  int64_t held = mesh_stall_update(&w->ack, bad, now_ms);
  if (bad && held >= timeout_ms) {
    snprintf(why, len, "%s lost: the peer acknowledged nothing for %.1f s (%u retransmissions, %u window probes)",
             cable, (double)held / 1000, (unsigned)ti.tcpi_retransmits, (unsigned)ti.tcpi_probes);
    return 1;
  }
  return 0;
}
