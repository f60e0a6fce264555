/* SPDX-License-Identifier: GPL-3.0-or-later
 * subnet.c: IPv4 addresses and subnets, and the addresses of this host.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mesh.h"

int mesh_ipv4_parse(const char *text, uint32_t *addr) {
  struct in_addr a;
  if (inet_pton(AF_INET, text, &a) != 1) return -1;
  *addr = ntohl(a.s_addr);
  return 0;
}

void mesh_ipv4_str(uint32_t addr, char *out, size_t len) {
  snprintf(out, len, "%u.%u.%u.%u", (addr >> 24) & 255u, (addr >> 16) & 255u, (addr >> 8) & 255u, addr & 255u);
}

uint32_t mesh_prefix_mask(int prefix) {
  if (prefix <= 0) return 0;
  if (prefix >= 32) return 0xffffffffu;
  return 0xffffffffu << (32 - prefix);
}

void mesh_subnet_str(uint32_t addr, int prefix, char *out, size_t len) {
  char a[MESH_STR];
  if (prefix < 0) {
    snprintf(out, len, "unknown");
    return;
  }
  mesh_ipv4_str(addr & mesh_prefix_mask(prefix), a, sizeof(a));
  snprintf(out, len, "%s/%d", a, prefix);
}

int mesh_subnet_contains(uint32_t net_addr, int prefix, uint32_t addr) {
  if (prefix < 0 || prefix > 32) return 0;
  uint32_t m = mesh_prefix_mask(prefix);
  return (net_addr & m) == (addr & m);
}

int mesh_ifname_matches(const char *filter, const char *name, int is_loopback) {
  if (filter == NULL || *filter == '\0') return !is_loopback;
  int exclude = 0, exact = 0;
  const char *p = filter;
  if (*p == '^') {
    exclude = 1;
    p++;
  }
  if (*p == '=') {
    exact = 1;
    p++;
  }
  int hit = 0;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n > 0) {
      if (exact ? (strlen(name) == n && strncmp(name, p, n) == 0) : strncmp(name, p, n) == 0) hit = 1;
    }
    if (!comma) break;
    p = comma + 1;
  }
  if (exclude) return !hit && !is_loopback;
  return hit;
}

int mesh_if_list(const char *filter, struct mesh_ifaddr *out, int max) {
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) != 0) return -1;
  int n = 0;
  for (struct ifaddrs *i = ifs; i != NULL && n < max; i = i->ifa_next) {
    if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || i->ifa_netmask == NULL) continue;
    if (!(i->ifa_flags & IFF_UP)) continue;
    if (!mesh_ifname_matches(filter, i->ifa_name, (i->ifa_flags & IFF_LOOPBACK) != 0)) continue;
    uint32_t mask = ntohl(((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr.s_addr);
    int prefix = 0;
    while (prefix < 32 && (mask & (0x80000000u >> prefix))) prefix++;
    if (prefix >= 32) continue;
    snprintf(out[n].name, sizeof(out[n].name), "%s", i->ifa_name);
    out[n].addr = ntohl(((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr);
    out[n].prefix = prefix;
    n++;
  }
  freeifaddrs(ifs);
  return n;
}

int mesh_addr_is_local(uint32_t addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(addr)};
  int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
  close(fd);
  return ok;
}

int mesh_if_prefix_of(const struct mesh_ifaddr *locals, int nlocal, uint32_t addr) {
  for (int i = 0; i < nlocal; i++)
    if (locals[i].addr == addr) return locals[i].prefix;
  return -1;
}
