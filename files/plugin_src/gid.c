/* SPDX-License-Identifier: GPL-3.0-or-later
 * gid.c: RDMA ports and their GIDs from sysfs, and the choice of (NIC, port, GID) per peer.
 *
 * Formats (drivers/infiniband/core/sysfs.c), below <root>/class/infiniband/<dev>/ports/<port>/:
 *   link_layer           "Ethernet" | "InfiniBand"
 *   state                "4: ACTIVE"
 *   rate                 "100 Gb/sec (4X EDR)"
 *   gids/<i>             "0000:0000:0000:0000:0000:ffff:c0a8:6401" (all zeros: empty slot)
 *   gid_attrs/types/<i>  "RoCE v2" | "IB/RoCE v1" (reading an empty slot fails)
 *   gid_attrs/ndevs/<i>  netdev name
 * A RoCE v2 GID that holds an IPv4 address is ::ffff:a.b.c.d; that address's subnet (from the
 * host's interface list) says which peers the port reaches directly; several ports on subnets of one
 * peer are rails.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh.h"

static int read_text(const char *path, char *out, size_t len) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(out, 1, len - 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad) return -1;
  out[n] = '\0';
  while (n > 0 && isspace((unsigned char)out[n - 1])) out[--n] = '\0';
  return 0;
}

int mesh_gid_parse(const char *text, uint8_t gid[16]) {
  struct in6_addr a;
  if (inet_pton(AF_INET6, text, &a) != 1) return -1;
  memcpy(gid, &a, 16);
  return 0;
}

int mesh_gid_ipv4(const uint8_t gid[16], uint32_t *addr) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (memcmp(gid, prefix, 12) != 0) return -1;
  *addr = ((uint32_t)gid[12] << 24) | ((uint32_t)gid[13] << 16) | ((uint32_t)gid[14] << 8) | gid[15];
  return 0;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
static int cmp_str(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Numeric entries of a directory, sorted; returns the count. */
static int numeric_entries(const char *dir, int *out, int max) {
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    char *end;
    long v = strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v >= 0 && v < 65536) out[n++] = (int)v;
  }
  closedir(d);
  qsort(out, (size_t)n, sizeof(int), cmp_int);
  return n;
}

static void note(char *notes, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *notes, size_t len, const char *fmt, ...) {
  if (notes == NULL || len == 0) return;
  size_t used = strlen(notes);
  if (used + 3 >= len) return;
  if (used > 0) {
    strcat(notes, "; ");
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(notes + used, len - used, fmt, ap);
  va_end(ap);
}

int mesh_nic_scan(const char *sysfs_root, int gid_index, const struct mesh_ifaddr *locals, int nlocal,
                  struct mesh_nic *out, int max, char *notes, size_t noteslen) {
  char base[512], path[1024], text[256];
  if (notes && noteslen) notes[0] = '\0';
  snprintf(base, sizeof(base), "%s/class/infiniband", sysfs_root);
  DIR *d = opendir(base);
  if (d == NULL) {
    note(notes, noteslen, "no %s", base);
    return 0;
  }
  char devs[MESH_MAX_NICS][MESH_STR];
  int ndev = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && ndev < MESH_MAX_NICS) {
    if (e->d_name[0] == '.') continue;
    snprintf(devs[ndev++], MESH_STR, "%s", e->d_name);
  }
  closedir(d);
  qsort(devs, (size_t)ndev, MESH_STR, cmp_str);
  int n = 0;
  for (int di = 0; di < ndev; di++) {
    int ports[32];
    snprintf(path, sizeof(path), "%s/%s/ports", base, devs[di]);
    int np = numeric_entries(path, ports, 32);
    for (int pi = 0; pi < np; pi++) {
      char pdir[768];
      snprintf(pdir, sizeof(pdir), "%s/%s/ports/%d", base, devs[di], ports[pi]);
      snprintf(path, sizeof(path), "%s/link_layer", pdir);
      if (read_text(path, text, sizeof(text)) != 0 || strcmp(text, "Ethernet") != 0) {
        note(notes, noteslen, "%s:%d is not RoCE (link layer %s)", devs[di], ports[pi],
             read_text(path, text, sizeof(text)) == 0 ? text : "unreadable");
        continue;
      }
      snprintf(path, sizeof(path), "%s/state", pdir);
      int active = read_text(path, text, sizeof(text)) == 0 && strstr(text, "ACTIVE") != NULL;
      snprintf(path, sizeof(path), "%s/rate", pdir);
      int speed = 0;
      if (read_text(path, text, sizeof(text)) == 0) speed = (int)(strtod(text, NULL) * 1000.0);
      int idx[1024];
      int ni;
      if (gid_index >= 0) {
        idx[0] = gid_index;
        ni = 1;
      } else {
        snprintf(path, sizeof(path), "%s/gids", pdir);
        ni = numeric_entries(path, idx, 1024);
      }
      int found = 0;
      for (int k = 0; k < ni && n < max; k++) {
        struct mesh_nic nic;
        memset(&nic, 0, sizeof(nic));
        snprintf(path, sizeof(path), "%s/gids/%d", pdir, idx[k]);
        if (read_text(path, text, sizeof(text)) != 0 || mesh_gid_parse(text, nic.gid) != 0) {
          if (gid_index >= 0) note(notes, noteslen, "%s:%d has no GID %d", devs[di], ports[pi], gid_index);
          continue;
        }
        snprintf(nic.gid_text, sizeof(nic.gid_text), "%s", text);
        if (mesh_gid_ipv4(nic.gid, &nic.addr) != 0) {
          if (gid_index >= 0)
            note(notes, noteslen, "GID %d of %s:%d (%s) holds no IPv4 address", gid_index, devs[di], ports[pi], text);
          continue;
        }
        snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", pdir, idx[k]);
        if (gid_index < 0 && (read_text(path, text, sizeof(text)) != 0 || strcmp(text, "RoCE v2") != 0)) continue;
        snprintf(nic.dev, sizeof(nic.dev), "%s", devs[di]);
        nic.port = ports[pi];
        nic.gid_index = idx[k];
        nic.active = active;
        nic.speed_mbps = speed;
        nic.prefix = -1;
        for (int l = 0; l < nlocal; l++) {
          if (locals[l].addr == nic.addr) {
            nic.prefix = locals[l].prefix;
            snprintf(nic.netdev, sizeof(nic.netdev), "%s", locals[l].name);
          }
        }
        snprintf(path, sizeof(path), "%s/gid_attrs/ndevs/%d", pdir, idx[k]);
        if (read_text(path, text, sizeof(text)) == 0) snprintf(nic.netdev, sizeof(nic.netdev), "%s", text);
        out[n++] = nic;
        found++;
      }
      if (found == 0 && gid_index < 0)
        note(notes, noteslen, "%s:%d has no RoCE v2 GID with an IPv4 address", devs[di], ports[pi]);
    }
  }
  return n;
}

int mesh_nic_rails(const struct mesh_nic *nics, int n, const uint32_t *peers, int npeer, int *nic_idx, int *peer_idx,
                   int max) {
  int best = -1, any_active = 0;
  for (int i = 0; i < n; i++)
    for (int p = 0; p < npeer; p++)
      if (nics[i].prefix >= 0 && mesh_subnet_contains(nics[i].addr, nics[i].prefix, peers[p]) &&
          nics[i].prefix >= best) {
        if (nics[i].prefix > best) any_active = 0;
        best = nics[i].prefix;
        any_active |= nics[i].active;
      }
  if (best < 0) return 0;
  int k = 0;
  for (int i = 0; i < n && k < max; i++) {
    if (nics[i].prefix != best || (any_active && !nics[i].active)) continue;
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= nics[nic_idx[j]].addr == nics[i].addr;
    if (dup) continue;
    for (int p = 0; p < npeer; p++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= peers[peer_idx[j]] == peers[p];
      if (taken || !mesh_subnet_contains(nics[i].addr, best, peers[p])) continue;
      nic_idx[k] = i;
      peer_idx[k] = p;
      k++;
      break;
    }
  }
  return k;
}
