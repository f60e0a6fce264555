/* SPDX-License-Identifier: GPL-3.0-or-later
 * log.c: the plugin's configuration (environment variables) and its logging.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mesh.h"

static mesh_abi_logger_t g_logger;
static int g_debug;

static int env_int(const char *name, int dflt, int lo, int hi, int *out, char *err, size_t errlen) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') {
    *out = dflt;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    snprintf(err, errlen, "%s=%s: expected an integer %d..%d", name, v, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

int mesh_config_load(struct mesh_config *cfg, char *err, size_t errlen) {
  memset(cfg, 0, sizeof(*cfg));
  const char *t = getenv("NCCL_MESH_TRANSPORT");
  if (t == NULL || *t == '\0' || strcmp(t, "auto") == 0) {
    cfg->transport = MESH_TRANSPORT_AUTO;
  } else if (strcmp(t, "tcp") == 0) {
    cfg->transport = MESH_TRANSPORT_TCP;
  } else if (strcmp(t, "verbs") == 0 || strcmp(t, "rdma") == 0) {
    cfg->transport = MESH_TRANSPORT_VERBS;
  } else {
    snprintf(err, errlen, "NCCL_MESH_TRANSPORT=%s: expected auto, tcp or verbs", t);
    return -1;
  }
  if (env_int("NCCL_MESH_NSOCKS", 4, 1, MESH_MAX_SOCKS, &cfg->nsocks, err, errlen) != 0 ||
      env_int("NCCL_MESH_DEBUG", 0, 0, 2, &cfg->debug, err, errlen) != 0 ||
      env_int("NCCL_MESH_GID_INDEX", -1, -1, 65535, &cfg->gid_index, err, errlen) != 0 ||
      env_int("NCCL_MESH_CONNECT_TIMEOUT_MS", 30000, 100, 3600000, &cfg->connect_timeout_ms, err, errlen) != 0 ||
      env_int("NCCL_MESH_CABLE_TIMEOUT_MS", 10000, 0, 3600000, &cfg->cable_timeout_ms, err, errlen) != 0)
    return -1;
  if (cfg->cable_timeout_ms > 0 && cfg->cable_timeout_ms < 1000) {
    snprintf(err, errlen, "NCCL_MESH_CABLE_TIMEOUT_MS=%d: expected 0 (never) or 1000..3600000", cfg->cable_timeout_ms);
    return -1;
  }
  int tc = -1;
  if (getenv("NCCL_MESH_TC") != NULL) {
    if (env_int("NCCL_MESH_TC", -1, 0, 255, &tc, err, errlen) != 0) return -1;
  } else if (env_int("NCCL_IB_TC", -1, 0, 255, &tc, err, errlen) != 0) {
    return -1;
  }
  cfg->traffic_class = tc;
  const char *ifn = getenv("NCCL_MESH_IFNAME");
  snprintf(cfg->ifname, sizeof(cfg->ifname), "%s", ifn ? ifn : "");
  const char *node = getenv("NCCL_MESH_NODE_ADDR");
  if (node != NULL && *node != '\0' && (mesh_ipv4_parse(node, &cfg->node_addr) != 0 || cfg->node_addr == 0)) {
    snprintf(err, errlen, "NCCL_MESH_NODE_ADDR=%s: expected this node's IPv4 node address (a.b.c.d, no prefix)", node);
    return -1;
  }
  const char *root = getenv("NCCL_MESH_SYSFS_ROOT");
  snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "%s", (root && *root) ? root : "/sys");
  return 0;
}

void mesh_log_set_logger(mesh_abi_logger_t logger, int debug) {
  g_logger = logger;
  g_debug = debug;
}

/* stderr gets a copy at NCCL_MESH_DEBUG >= min_debug, and every warning when NCCL gave no logger. */
static void emit(mesh_abi_log_level_t level, int min_debug, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  /* NCCL's logger filters by NCCL_DEBUG itself; our own stderr copy follows NCCL_MESH_DEBUG. */
  if (g_logger != NULL) g_logger(level, MESH_ABI_LOG_NET | MESH_ABI_LOG_INIT, __FILE__, __LINE__, "NET/Mesh : %s", msg);
  if (g_debug >= min_debug || (g_logger == NULL && level == MESH_ABI_LOG_WARN)) {
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    fprintf(stderr, "[mesh %s:%d] %s%s\n", host, (int)getpid(), level == MESH_ABI_LOG_WARN ? "error: " : "", msg);
  }
}

void mesh_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(MESH_ABI_LOG_WARN, 1, fmt, ap);
  va_end(ap);
}

void mesh_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit(MESH_ABI_LOG_INFO, 1, fmt, ap);
  va_end(ap);
}

void mesh_trace(const char *fmt, ...) {
  if (g_debug < 2) return;
  va_list ap;
  va_start(ap, fmt);
  emit(MESH_ABI_LOG_TRACE, 2, fmt, ap);
  va_end(ap);
}
