/* SPDX-License-Identifier: GPL-3.0-or-later
 * harness.c: see harness.h.
 */
#include "harness.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_verbs.h"

extern const mesh_abi_net_v11_t ncclNetPlugin_v11;
char tree[256];

double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint32_t ip(const char *s) {
  uint32_t a = 0;
  if (mesh_ipv4_parse(s, &a) != 0) abort();
  return a;
}

void put_file(const char *rel, const char *content) {
  char path[1024], dir[1024];
  snprintf(path, sizeof(path), "%s/%s", tree, rel);
  for (char *p = path + strlen(tree) + 1; (p = strchr(p, '/')) != NULL; p++) {
    snprintf(dir, sizeof(dir), "%.*s", (int)(p - path), path);
    mkdir(dir, 0755);
  }
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(content, f);
  fclose(f);
}

void port_files(const char *dev, const char *link_layer) {
  char rel[256];
  snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/link_layer", dev);
  put_file(rel, link_layer);
  snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/state", dev);
  put_file(rel, "4: ACTIVE\n");
  snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/rate", dev);
  put_file(rel, "100 Gb/sec (4X EDR)\n");
}

void gid(const char *dev, int i, const char *value, const char *type, const char *ndev) {
  char rel[256];
  snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/gids/%d", dev, i);
  put_file(rel, value);
  if (type) {
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/gid_attrs/types/%d", dev, i);
    put_file(rel, type);
  }
  if (ndev) {
    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/1/gid_attrs/ndevs/%d", dev, i);
    put_file(rel, ndev);
  }
}

void new_tree(void) {
  snprintf(tree, sizeof(tree), "/tmp/mesh-sysfs-XXXXXX");
  if (!mkdtemp(tree)) abort();
}

void roce_port(const char *dev, const char *v4_gid, const char *ndev) {
  port_files(dev, "Ethernet\n");
  gid(dev, 0, LL0, "IB/RoCE v1\n", ndev);
  gid(dev, 1, LL0, "RoCE v2\n", ndev);
  gid(dev, 2, v4_gid, "IB/RoCE v1\n", ndev);
  gid(dev, 3, v4_gid, "RoCE v2\n", ndev);
}

void verbs_tree(void) {
  new_tree();
  roce_port("fake0", "0000:0000:0000:0000:0000:ffff:7f00:0001\n", "lo\n");
  setenv("NCCL_MESH_SYSFS_ROOT", tree, 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  setenv("NCCL_MESH_TRANSPORT", "verbs", 1);
}

char warnings[8192];
char infos[16384];
void logger(mesh_abi_log_level_t level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)flags, (void)file, (void)line;
  char *buf = level == MESH_ABI_LOG_WARN ? warnings : level == MESH_ABI_LOG_INFO ? infos : NULL;
  size_t size = level == MESH_ABI_LOG_WARN ? sizeof(warnings) : sizeof(infos);
  if (buf == NULL) return;
  size_t used = strlen(buf);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, size - used, fmt, ap);
  va_end(ap);
  strncat(buf, "\n", size - strlen(buf) - 1);
}

const mesh_abi_net_v11_t *P = &ncclNetPlugin_v11;
void *ctx;

void connect_self(void **sc, void **rc, void **lc, mesh_abi_result_t *crc, mesh_abi_result_t *arc) {
  char handle[MESH_ABI_HANDLE_MAXSIZE] = {0};
  *sc = *rc = *lc = NULL;
  *crc = *arc = MESH_ABI_SUCCESS;
  if (P->listen(ctx, 0, handle, lc) != MESH_ABI_SUCCESS) {
    *crc = MESH_ABI_INTERNAL_ERROR;
    return;
  }
  connect_with(handle, *lc, sc, rc, crc, arc);
}

void connect_with(const char *handle_in, void *lc, void **sc, void **rc, mesh_abi_result_t *crc,
                  mesh_abi_result_t *arc) {
  char handle[MESH_ABI_HANDLE_MAXSIZE]; /* connect keeps its progress in the handle: a copy of our own */
  memcpy(handle, handle_in, sizeof(handle));
  *sc = *rc = NULL;
  *crc = *arc = MESH_ABI_SUCCESS;
  mesh_abi_device_handle_t *dev = NULL;
  double t0 = now();
  while ((!*sc || !*rc) && now() - t0 < 5) {
    if (!*sc) *crc = P->connect(ctx, 0, handle, sc, &dev);
    if (!*rc) *arc = P->accept(lc, rc, &dev);
    if (*crc != MESH_ABI_SUCCESS || *arc != MESH_ABI_SUCCESS) {
      /* the other side must see the failure too (its socket closes) and release what it holds */
      for (int i = 0; i < 100; i++) {
        usleep(2000);
        if (*arc == MESH_ABI_SUCCESS && !*rc) *arc = P->accept(lc, rc, &dev);
        if (*crc == MESH_ABI_SUCCESS && !*sc) *crc = P->connect(ctx, 0, handle, sc, &dev);
      }
      return;
    }
  }
}

int exchange(void *sc, void *rc, size_t send_size, size_t room, char *err_out) {
  unsigned char *out = malloc(send_size + 1), *in = calloc(1, room + 1);
  for (size_t i = 0; i < send_size; i++) out[i] = (unsigned char)(i ^ (i >> 8));
  void *smh = NULL, *rmh = NULL, *sreq = NULL, *rreq = NULL;
  int result = -1;
  if (P->regMr(sc, out, send_size + 1, MESH_ABI_PTR_HOST, &smh) || P->regMr(rc, in, room + 1, MESH_ABI_PTR_HOST, &rmh))
    goto out;
  size_t rsz = room;
  int tag = 1;
  while (!rreq)
    if (P->irecv(rc, 1, (void **)&in, &rsz, &tag, &rmh, NULL, &rreq)) goto out;
  while (!sreq)
    if (P->isend(sc, out, send_size, 1, smh, NULL, &sreq)) goto out;
  int sd = 0, rd = 0, ss = -1, rs = -1;
  double t0 = now();
  while ((!sd || !rd) && now() - t0 < 5) {
    if (!rd && P->test(rreq, &rd, &rs) != MESH_ABI_SUCCESS) {
      result = -2;
      goto out;
    }
    if (!sd && P->test(sreq, &sd, &ss) != MESH_ABI_SUCCESS) {
      result = -3;
      goto out;
    }
  }
  if (sd && rd && (size_t)ss == send_size && (size_t)rs == send_size && memcmp(in, out, send_size) == 0) result = 0;
  else snprintf(err_out, 128, "done %d/%d sizes %d/%d", sd, rd, ss, rs);
out:
  if (smh) P->deregMr(sc, smh);
  if (rmh) P->deregMr(rc, rmh);
  free(out);
  free(in);
  return result;
}

int scenarios_run, scenarios_failed;
void run_scenarios(int n, const char *const names[], void (*const fns[])(void)) {
  pid_t pids[16];
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < n && i < 16; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      checks = failures = 0;
      fns[i]();
      printf("  scenario %-28s %d checks, %d failed\n", names[i], checks, failures);
      fflush(stdout);
      _exit(failures ? 1 : 0);
    }
  }
  for (int i = 0; i < n && i < 16; i++) {
    int st = 0;
    waitpid(pids[i], &st, 0);
    scenarios_run++;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      scenarios_failed++;
      fprintf(stderr, "FAIL scenario %s (status 0x%x)\n", names[i], st);
    }
  }
}

void run_scenario(const char *name, void (*fn)(void)) { run_scenarios(1, &name, &fn); }

void expect_init_fails(mesh_abi_result_t want, const char *message) {
  mesh_abi_result_t rc = P->init(&ctx, 1, NULL, logger, NULL);
  CHECK(rc == want && strstr(warnings, message), "init returned %d, expected %d with \"%s\": %s", rc, want, message,
        warnings);
}

mesh_abi_result_t init_fake_verbs(int fail) {
  verbs_tree();
  fake_verbs_reset("fake0", (enum fake_fail)fail);
  mesh_verbs_use_ops(&fake_verbs_ops);
  return P->init(&ctx, 1, NULL, logger, NULL);
}

int finish(void) {
  printf("scenarios: %d run, %d failed\n", scenarios_run, scenarios_failed);
  return failures || scenarios_failed ? 1 : 0;
}
