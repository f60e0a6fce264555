/* SPDX-License-Identifier: GPL-3.0-or-later
 * test_abi.c: loads the built library as NCCL does and checks each exported ncclNetPlugin_vN:
 * the name, every function pointer set, the struct sizes NCCL's headers give, and the properties
 * each version's getProperties writes (with guard bytes after the struct: nothing written past it).
 *   test_abi PATH/libnccl-net-mesh.so
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_abi.h"
#include "check.h"

/* Every member after the name is a function pointer: none may be NULL. */
static int null_functions(const void *table, size_t size) {
  const char *p = (const char *)table + sizeof(const char *);
  int nulls = 0;
  for (size_t off = sizeof(const char *); off < size; off += sizeof(void *), p += sizeof(void *)) {
    void *fn;
    memcpy(&fn, p, sizeof(fn));
    nulls += fn == NULL;
  }
  return nulls;
}

struct guarded_v8 {
  mesh_abi_properties_v8_t p;
  unsigned char guard[32];
};
struct guarded_v9 {
  mesh_abi_properties_v9_t p;
  unsigned char guard[32];
};
struct guarded_v11 {
  mesh_abi_properties_v11_t p;
  unsigned char guard[32];
};

static int guard_intact(const unsigned char *g) {
  for (int i = 0; i < 32; i++)
    if (g[i] != 0xA5) return 0;
  return 1;
}

static void logger(mesh_abi_log_level_t level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_abi LIBRARY\n");
    return 2;
  }
  setenv("NCCL_MESH_TRANSPORT", "tcp", 1);
  setenv("NCCL_MESH_IFNAME", "lo", 1);
  /* The layouts NCCL's headers define (x86-64 / aarch64 LP64). */
  CHECK(sizeof(mesh_abi_properties_v8_t) == 64, "%zu", sizeof(mesh_abi_properties_v8_t));
  CHECK(sizeof(mesh_abi_properties_v9_t) == 104, "%zu", sizeof(mesh_abi_properties_v9_t));
  CHECK(sizeof(mesh_abi_properties_v11_t) == 112, "%zu", sizeof(mesh_abi_properties_v11_t));
  CHECK(offsetof(mesh_abi_properties_v11_t, vProps) == 64 && offsetof(mesh_abi_properties_v11_t, maxP2pBytes) == 88 &&
            offsetof(mesh_abi_properties_v11_t, maxMultiRequestSize) == 104,
        "v11 property offsets");
  CHECK(offsetof(mesh_abi_properties_v8_t, netDeviceVersion) == 56, "v8 property offsets");
  CHECK(sizeof(mesh_abi_net_v8_t) == 8 + 18 * 8, "v8 table: name + 18 functions");
  CHECK(sizeof(mesh_abi_net_v9_t) == 8 + 19 * 8, "v9 table: name + 19 functions");
  CHECK(sizeof(mesh_abi_net_v10_t) == 8 + 19 * 8, "v10 table: name + 19 functions");
  CHECK(sizeof(mesh_abi_net_v11_t) == 8 + 21 * 8, "v11 table: name + 21 functions");
  CHECK(offsetof(mesh_abi_net_v11_t, finalize) == 8 + 19 * 8 && offsetof(mesh_abi_net_v11_t, setNetAttr) == 8 + 20 * 8,
        "v11 finalize/setNetAttr slots");
  CHECK(sizeof(mesh_abi_device_handle_t) == 32, "device handle");

  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "FAIL dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  CHECK(dlsym(lib, "mesh_tcp_slice") == NULL && dlsym(lib, "mesh_handle_pack") == NULL,
        "internal functions stay hidden");
  static const struct {
    int v;
    size_t size;
  } versions[] = {{8, sizeof(mesh_abi_net_v8_t)}, {9, sizeof(mesh_abi_net_v9_t)},
                  {10, sizeof(mesh_abi_net_v10_t)}, {11, sizeof(mesh_abi_net_v11_t)}};
  for (size_t k = 0; k < 4; k++) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", versions[k].v);
    const void *t = dlsym(lib, sym);
    CHECK(t != NULL, "%s exported", sym);
    if (t == NULL) continue;
    const char *name = *(const char *const *)t;
    CHECK(name && strcmp(name, "Mesh") == 0, "%s name %s", sym, name ? name : "(null)");
    CHECK(null_functions(t, versions[k].size) == 0, "%s: %d NULL functions", sym, null_functions(t, versions[k].size));
  }
  CHECK(dlsym(lib, "ncclNetPlugin_v7") == NULL && dlsym(lib, "ncclCollNetPlugin_v11") == NULL,
        "no v7 table, no collNet");

  const mesh_abi_net_v8_t *n8 = dlsym(lib, "ncclNetPlugin_v8");
  const mesh_abi_net_v9_t *n9 = dlsym(lib, "ncclNetPlugin_v9");
  const mesh_abi_net_v10_t *n10 = dlsym(lib, "ncclNetPlugin_v10");
  const mesh_abi_net_v11_t *n11 = dlsym(lib, "ncclNetPlugin_v11");
  if (n8 && n9 && n10 && n11) {
    void *ctx = NULL;
    CHECK(n11->init(&ctx, 5, NULL, logger, NULL) == MESH_ABI_SUCCESS && ctx != NULL, "v11 init");
    CHECK(n8->init(logger) == MESH_ABI_SUCCESS && n9->init(logger) == MESH_ABI_SUCCESS &&
              n10->init(logger, NULL) == MESH_ABI_SUCCESS,
          "v8-v10 init (repeated init is fine)");
    int nd = 0;
    CHECK(n11->devices(&nd) == MESH_ABI_SUCCESS && nd == 1, "one device");
    struct guarded_v8 g8;
    struct guarded_v9 g9;
    struct guarded_v11 g11;
    memset(&g8, 0xA5, sizeof(g8));
    memset(&g9, 0xA5, sizeof(g9));
    memset(&g11, 0xA5, sizeof(g11));
    CHECK(n8->getProperties(0, &g8.p) == MESH_ABI_SUCCESS && guard_intact(g8.guard), "v8 properties in bounds");
    CHECK(strcmp(g8.p.name, "mesh_tcp") == 0 && g8.p.ptrSupport == MESH_ABI_PTR_HOST && g8.p.maxRecvs == 1 &&
              g8.p.speed > 0 && g8.p.netDeviceType == MESH_ABI_DEVICE_HOST,
          "v8 values");
    CHECK(n10->getProperties(0, &g9.p) == MESH_ABI_SUCCESS && guard_intact(g9.guard), "v9/v10 properties in bounds");
    CHECK(g9.p.vProps.ndevs == 1 && g9.p.vProps.devs[0] == 0 && g9.p.maxP2pBytes >= ((size_t)1 << 30) &&
              g9.p.forceFlush == 0,
          "v10 values");
    CHECK(n11->getProperties(0, &g11.p) == MESH_ABI_SUCCESS && guard_intact(g11.guard), "v11 properties in bounds");
    CHECK(g11.p.maxMultiRequestSize == 1 && g11.p.maxCollBytes >= ((size_t)1 << 30), "v11 values");
    mesh_abi_net_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    CHECK(n11->setNetAttr(ctx, &attr) == MESH_ABI_SUCCESS && n11->finalize(ctx) == MESH_ABI_SUCCESS,
          "setNetAttr and finalize");
  }
  printf("abi: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
