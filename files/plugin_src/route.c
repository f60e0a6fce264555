/* SPDX-License-Identifier: GPL-3.0-or-later
 * route.c: how the TCP backend reaches a peer, from the peer's addresses in the connect handle.
 *
 * One subnet per cable: a local address whose subnet holds one of the peer's addresses is a cable facing
 * that peer.  Several such cables are rails, used together.  A peer that no cable faces (a ring's or chain's
 * non-neighbour, a partial mesh) is reached at its node address, a /32 that the cluster routes over the
 * data cables along shortest paths.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mesh.h"

int mesh_choose_rails(const struct mesh_ifaddr *locals, int nlocal, const uint32_t *peers, int npeer,
                      int *local_idx, int *peer_idx, int max) {
  int best = -1;
  for (int l = 0; l < nlocal; l++)
    for (int p = 0; p < npeer; p++)
      if (locals[l].prefix > best && mesh_subnet_contains(locals[l].addr, locals[l].prefix, peers[p]))
        best = locals[l].prefix;
  if (best < 0) return 0;
  int n = 0;
  uint32_t used_peer[MESH_HANDLE_MAX_ADDRS];
  int nused = 0;
  for (int l = 0; l < nlocal && n < max; l++) {
    if (locals[l].prefix != best) continue;
    int dup = 0;
    for (int k = 0; k < n; k++) dup |= locals[local_idx[k]].addr == locals[l].addr;
    if (dup) continue;
    for (int p = 0; p < npeer; p++) {
      int taken = 0;
      for (int k = 0; k < nused; k++) taken |= used_peer[k] == peers[p];
      if (taken || !mesh_subnet_contains(locals[l].addr, best, peers[p])) continue;
      local_idx[n] = l;
      peer_idx[n] = p;
      n++;
      if (nused < MESH_HANDLE_MAX_ADDRS) used_peer[nused++] = peers[p];
      break;
    }
  }
  return n;
}

int mesh_plan_tcp(const struct mesh_ifaddr *locals, int nlocal, const struct mesh_handle *peer, uint32_t own_node,
                  struct mesh_plan *plan) {
  memset(plan, 0, sizeof(*plan));
  int li[MESH_MAX_SOCKS], pi[MESH_MAX_SOCKS];
  int n = mesh_choose_rails(locals, nlocal, peer->addrs, peer->naddrs, li, pi, MESH_MAX_SOCKS);
  int narrowest = -1;
  for (int l = 0; l < nlocal; l++)
    if (locals[l].prefix > narrowest) narrowest = locals[l].prefix;
  /* With node addresses at both ends the cluster routes every pair over the cables: a peer seen only on a
   * wider subnet (management) is not a neighbour, and its traffic belongs on those routes. */
  int shared_only = n > 0 && own_node != 0 && peer->node_addr != 0 && locals[li[0]].prefix < narrowest;
  if (n > 0 && !shared_only) {
    plan->kind = MESH_PLAN_DIRECT;
    plan->nroutes = n;
    for (int k = 0; k < n; k++) {
      struct mesh_route *r = &plan->routes[k];
      r->local = locals[li[k]].addr;
      r->peer = peer->addrs[pi[k]];
      r->prefix = locals[li[k]].prefix;
      snprintf(r->ifname, sizeof(r->ifname), "%s", locals[li[k]].name);
    }
    return plan->kind;
  }
  if (peer->node_addr != 0) {
    plan->kind = MESH_PLAN_NODE;
    plan->nroutes = 1;
    plan->routes[0].local = own_node;
    plan->routes[0].peer = peer->node_addr;
    plan->routes[0].prefix = -1;
    plan->routes[0].via_node = 1;
    return plan->kind;
  }
  plan->kind = MESH_PLAN_NONE;
  return plan->kind;
}

int mesh_rail_sockets(int nsocks, int nroutes) {
  if (nroutes < 1) nroutes = 1;
  int n = (nsocks + nroutes - 1) / nroutes * nroutes;
  if (n < nroutes) n = nroutes;
  return n > MESH_MAX_SOCKS ? MESH_MAX_SOCKS : n;
}

/* Keyed by the peer's first handle address: stable per peer node, whatever its listen port. */
#define RR_SLOTS 256
static pthread_mutex_t g_rr_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint32_t key;
  unsigned next;
} g_rr[RR_SLOTS];

unsigned mesh_rail_next(uint32_t key) {
  unsigned v = 0; /* more peers than slots: the first facing NIC */
  pthread_mutex_lock(&g_rr_mu);
  unsigned slot = (key * 2654435761u) % RR_SLOTS;
  for (unsigned k = 0; k < RR_SLOTS; k++) {
    unsigned i = (slot + k) % RR_SLOTS;
    if (g_rr[i].key == key || g_rr[i].next == 0) {
      g_rr[i].key = key;
      v = g_rr[i].next++;
      break;
    }
  }
  pthread_mutex_unlock(&g_rr_mu);
  return v;
}
