/* SPDX-License-Identifier: GPL-3.0-or-later
 * handle.c: the connect handle NCCL carries from the listening rank to the connecting one.
 *
 * Wire layout (MESH_HANDLE_WIRE_BYTES = 104, integers big-endian):
 *   0  "MSH1" magic          4  version (2)   5  backend   6  nsocks   7  naddrs
 *   8  port (2)             10  reserved (2) 12  nonce (8)
 *  20  16 IPv4 addresses (4 each)            84  16 prefix lengths (1 each)
 * 100  node address (4; 0 = none)
 * Bytes 104..119 stay zero; 120..127 belong to the connector (its progress pointer).
 * Version 2 (node address, self-describing TCP slices) does not talk to version 1: every node runs one build.
 */
#include <stdio.h>
#include <string.h>

#include "mesh.h"
#include "wire.h"

#define MAGIC "MSH1"
#define VERSION 2

_Static_assert(MESH_HANDLE_WIRE_BYTES <= MESH_HANDLE_STATE_OFFSET, "handle overlaps the connector's state");
_Static_assert(MESH_HANDLE_STATE_OFFSET + sizeof(void *) <= MESH_ABI_HANDLE_MAXSIZE, "handle exceeds NCCL's 128 bytes");


const char *mesh_backend_name(int backend) {
  return backend == MESH_BACKEND_TCP ? "tcp" : backend == MESH_BACKEND_VERBS ? "verbs" : "unknown";
}

int mesh_handle_pack(const struct mesh_handle *h, void *buf, size_t buflen, char *err, size_t errlen) {
  if (buflen < MESH_ABI_HANDLE_MAXSIZE) {
    snprintf(err, errlen, "handle buffer of %zu bytes, need %d", buflen, MESH_ABI_HANDLE_MAXSIZE);
    return -1;
  }
  if (h->naddrs == 0 || h->naddrs > MESH_HANDLE_MAX_ADDRS) {
    snprintf(err, errlen, "handle with %u addresses, expected 1..%d", h->naddrs, MESH_HANDLE_MAX_ADDRS);
    return -1;
  }
  if (h->backend != MESH_BACKEND_TCP && h->backend != MESH_BACKEND_VERBS) {
    snprintf(err, errlen, "handle with unknown backend %u", h->backend);
    return -1;
  }
  if (h->nsocks == 0 || h->nsocks > MESH_MAX_SOCKS) {
    snprintf(err, errlen, "handle with %u sockets, expected 1..%d", h->nsocks, MESH_MAX_SOCKS);
    return -1;
  }
  uint8_t *b = buf;
  memset(b, 0, MESH_ABI_HANDLE_MAXSIZE);
  memcpy(b, MAGIC, 4);
  b[4] = VERSION;
  b[5] = h->backend;
  b[6] = h->nsocks;
  b[7] = h->naddrs;
  put16(b + 8, h->port);
  put64(b + 12, h->nonce);
  for (int i = 0; i < h->naddrs; i++) {
    put32(b + 20 + 4 * i, h->addrs[i]);
    b[84 + i] = h->prefixes[i];
  }
  put32(b + 100, h->node_addr);
  return 0;
}

int mesh_handle_unpack(const void *buf, size_t buflen, struct mesh_handle *h, char *err, size_t errlen) {
  const uint8_t *b = buf;
  memset(h, 0, sizeof(*h));
  if (buflen < MESH_HANDLE_WIRE_BYTES) {
    snprintf(err, errlen, "handle of %zu bytes, need %d", buflen, MESH_HANDLE_WIRE_BYTES);
    return -1;
  }
  if (memcmp(b, MAGIC, 4) != 0) {
    snprintf(err, errlen, "not a Mesh plugin handle: was the peer's NCCL_NET_PLUGIN the same?");
    return -1;
  }
  if (b[4] != VERSION) {
    snprintf(err, errlen, "the peer's Mesh plugin speaks handle version %u, this one %d: install the same plugin build "
             "on every node", b[4], VERSION);
    return -1;
  }
  h->backend = b[5];
  h->nsocks = b[6];
  h->naddrs = b[7];
  if ((h->backend != MESH_BACKEND_TCP && h->backend != MESH_BACKEND_VERBS) || h->nsocks == 0 ||
      h->nsocks > MESH_MAX_SOCKS || h->naddrs == 0 || h->naddrs > MESH_HANDLE_MAX_ADDRS) {
    snprintf(err, errlen, "corrupt Mesh handle (backend %u, %u sockets, %u addresses)", h->backend, h->nsocks,
             h->naddrs);
    return -1;
  }
  h->port = get16(b + 8);
  h->nonce = get64(b + 12);
  for (int i = 0; i < h->naddrs; i++) {
    h->addrs[i] = get32(b + 20 + 4 * i);
    h->prefixes[i] = b[84 + i];
    if (h->prefixes[i] > 32) {
      snprintf(err, errlen, "corrupt Mesh handle (prefix /%u)", h->prefixes[i]);
      return -1;
    }
  }
  h->node_addr = get32(b + 100);
  return 0;
}
