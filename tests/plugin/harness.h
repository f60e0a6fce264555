/* SPDX-License-Identifier: GPL-3.0-or-later
 * harness.h: what the unit test binaries share: time, addresses, fake sysfs trees in the kernel's formats,
 * a logger that keeps the plugin's messages, and whole-plugin scenarios in child processes (the plugin
 * keeps process-wide state from init) driven through the v11 table.
 */
#ifndef MESH_TEST_HARNESS_H
#define MESH_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "mesh.h"

double now(void);
uint32_t ip(const char *s); /* aborts on a bad literal */

/* ---- fake sysfs: files below tree (set by mkdtemp) ---- */
extern char tree[256];
#define LL0 "fe80:0000:0000:0000:0e42:a1ff:fe5a:3b2c\n"
#define ZERO "0000:0000:0000:0000:0000:0000:0000:0000\n"
void put_file(const char *rel, const char *content);
void port_files(const char *dev, const char *link_layer);
void gid(const char *dev, int i, const char *value, const char *type, const char *ndev);
/* A new empty tree under /tmp. */
void new_tree(void);
/* An Ethernet (RoCE) port with one IPv4 address, as mlx5 fills its GID table: GIDs 0 and 1 the link-local
 * LL0, 2 and 3 the IPv4-mapped V4_GID, each as RoCE v1 then v2; NDEV is the netdev file's content. */
void roce_port(const char *dev, const char *v4_gid, const char *ndev);
/* One RoCE port, fake0, whose RoCE v2 GID 3 holds 127.0.0.1 on lo; the verbs backend on NCCL_MESH_IFNAME=lo. */
void verbs_tree(void);

/* ---- the plugin through its v11 table ---- */
extern const mesh_abi_net_v11_t *P;
extern void *ctx;
extern char warnings[8192]; /* every WARN line the plugin logged */
extern char infos[16384];   /* every INFO line */
void logger(mesh_abi_log_level_t level, unsigned long flags, const char *file, int line, const char *fmt, ...);
/* Listens, then connects and accepts until both comms exist (or a call fails); returns the last results. */
void connect_self(void **sc, void **rc, void **lc, mesh_abi_result_t *crc, mesh_abi_result_t *arc);
/* The same from a handle the test prepared (a rewritten copy of what listen wrote for lc). */
void connect_with(const char *handle, void *lc, void **sc, void **rc, mesh_abi_result_t *crc, mesh_abi_result_t *arc);
/* One message of send_size bytes into a receive of room bytes: 0 ok, -2 the receive failed, -3 the send. */
int exchange(void *sc, void *rc, size_t send_size, size_t room, char *err_out);

/* Init must fail with `want`, its warning holding `message` (a bad setting, refused by name). */
void expect_init_fails(mesh_abi_result_t want, const char *message);

/* verbs_tree(), the fake verbs with that failure injected, and init: its result. */
mesh_abi_result_t init_fake_verbs(int fail);

/* Runs fn in a child process; its checks count there, a failure marks the scenario failed. */
void run_scenario(const char *name, void (*fn)(void));
/* The same for n (at most 16) scenarios at once, so that their waits overlap. */
void run_scenarios(int n, const char *const names[], void (*const fns[])(void));
extern int scenarios_run, scenarios_failed;
/* Prints the scenarios' count; a test binary's exit status: 1 after any failed check or scenario. */
int finish(void);

#endif
