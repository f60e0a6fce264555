/* SPDX-License-Identifier: GPL-3.0-or-later
 *
 * mesh_abi.h: the NCCL network plugin interface, versions 8 to 11, as this project uses it.
 *
 * Written for rdmaops.cluster from the documented layout of NCCL's external network plugin
 * interface (the structs NCCL reads from the symbols ncclNetPlugin_v8 .. ncclNetPlugin_v11 and
 * the property structs it passes to getProperties).  Only the pieces a point-to-point network
 * needs are described; collective networks are not.  Field order and types are the ABI: do not
 * reorder.  tests/plugin/test_abi.c checks the sizes and offsets this file promises.
 */
#ifndef MESH_ABI_H
#define MESH_ABI_H

#include <stddef.h>
#include <stdint.h>

/* A connect handle travels between ranks in a buffer of this many bytes. */
#define MESH_ABI_HANDLE_MAXSIZE 128

/* Pointer kinds of ptrSupport and of regMr's type. */
#define MESH_ABI_PTR_HOST 0x1
#define MESH_ABI_PTR_CUDA 0x2
#define MESH_ABI_PTR_DMABUF 0x4

/* NCCL keeps at most this many requests in flight per comm. */
#define MESH_ABI_MAX_REQUESTS 32

/* Physical devices a virtual NIC may merge (v9..v11). */
#define MESH_ABI_MAX_DEVS_PER_NIC 4

/* Return codes (ncclResult_t). */
typedef enum {
  MESH_ABI_SUCCESS = 0,
  MESH_ABI_UNHANDLED_CUDA_ERROR = 1,
  MESH_ABI_SYSTEM_ERROR = 2,
  MESH_ABI_INTERNAL_ERROR = 3,
  MESH_ABI_INVALID_ARGUMENT = 4,
  MESH_ABI_INVALID_USAGE = 5,
  MESH_ABI_REMOTE_ERROR = 6,
  MESH_ABI_IN_PROGRESS = 7
} mesh_abi_result_t;

/* Log levels and subsystem flags of NCCL's logger callback. */
typedef enum {
  MESH_ABI_LOG_NONE = 0,
  MESH_ABI_LOG_VERSION = 1,
  MESH_ABI_LOG_WARN = 2,
  MESH_ABI_LOG_INFO = 3,
  MESH_ABI_LOG_ABORT = 4,
  MESH_ABI_LOG_TRACE = 5
} mesh_abi_log_level_t;
#define MESH_ABI_LOG_INIT 0x1UL
#define MESH_ABI_LOG_NET 0x10UL

typedef void (*mesh_abi_logger_t)(mesh_abi_log_level_t level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);
/* Profiler callback (v10, v11); this plugin never calls it. */
typedef mesh_abi_result_t (*mesh_abi_profiler_t)(void **event, int type, void *parent, int64_t plugin_id,
                                                 void *ext_data);

/* Device offload (netDeviceType); this plugin is host-only. */
typedef enum { MESH_ABI_DEVICE_HOST = 0, MESH_ABI_DEVICE_UNPACK = 1 } mesh_abi_device_type_t;

typedef struct {
  mesh_abi_device_type_t netDeviceType;
  int netDeviceVersion;
  void *handle;
  size_t size;
  int needsProxyProgress;
} mesh_abi_device_handle_t;

typedef struct {
  int ndevs;
  int devs[MESH_ABI_MAX_DEVS_PER_NIC];
} mesh_abi_vdevice_props_t;

/* v10 passes it to connect, v11 to init. */
typedef struct {
  int trafficClass;
} mesh_abi_comm_config_t;
#define MESH_ABI_TRAFFIC_CLASS_UNDEF (-1)

/* ---- properties ---- */
typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed; /* Mbps */
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  mesh_abi_device_type_t netDeviceType;
  int netDeviceVersion;
} mesh_abi_properties_v8_t;

/* v9 and v10 share this layout. */
typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  mesh_abi_device_type_t netDeviceType;
  int netDeviceVersion;
  mesh_abi_vdevice_props_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
} mesh_abi_properties_v9_t;
typedef mesh_abi_properties_v9_t mesh_abi_properties_v10_t;

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  mesh_abi_device_type_t netDeviceType;
  int netDeviceVersion;
  mesh_abi_vdevice_props_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
} mesh_abi_properties_v11_t;

/* v11's setNetAttr argument (hints; this plugin accepts and ignores them). */
typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} mesh_abi_comm_attr_t;
typedef struct {
  mesh_abi_comm_attr_t sendCommAttr;
  mesh_abi_comm_attr_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
} mesh_abi_net_attr_t;

/* ---- the function tables ---- */
typedef struct {
  const char *name;
  mesh_abi_result_t (*init)(mesh_abi_logger_t logger);
  mesh_abi_result_t (*devices)(int *ndev);
  mesh_abi_result_t (*getProperties)(int dev, mesh_abi_properties_v8_t *props);
  mesh_abi_result_t (*listen)(int dev, void *handle, void **listen_comm);
  mesh_abi_result_t (*connect)(int dev, void *handle, void **send_comm, mesh_abi_device_handle_t **send_dev);
  mesh_abi_result_t (*accept)(void *listen_comm, void **recv_comm, mesh_abi_device_handle_t **recv_dev);
  mesh_abi_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  mesh_abi_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                   void **mhandle);
  mesh_abi_result_t (*deregMr)(void *comm, void *mhandle);
  mesh_abi_result_t (*isend)(void *send_comm, void *data, int size, int tag, void *mhandle, void **request);
  mesh_abi_result_t (*irecv)(void *recv_comm, int n, void **data, int *sizes, int *tags, void **mhandles,
                             void **request);
  mesh_abi_result_t (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
  mesh_abi_result_t (*test)(void *request, int *done, int *sizes);
  mesh_abi_result_t (*closeSend)(void *send_comm);
  mesh_abi_result_t (*closeRecv)(void *recv_comm);
  mesh_abi_result_t (*closeListen)(void *listen_comm);
  mesh_abi_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  mesh_abi_result_t (*irecvConsumed)(void *recv_comm, int n, void *request);
} mesh_abi_net_v8_t;

typedef struct {
  const char *name;
  mesh_abi_result_t (*init)(mesh_abi_logger_t logger);
  mesh_abi_result_t (*devices)(int *ndev);
  mesh_abi_result_t (*getProperties)(int dev, mesh_abi_properties_v9_t *props);
  mesh_abi_result_t (*listen)(int dev, void *handle, void **listen_comm);
  mesh_abi_result_t (*connect)(int dev, void *handle, void **send_comm, mesh_abi_device_handle_t **send_dev);
  mesh_abi_result_t (*accept)(void *listen_comm, void **recv_comm, mesh_abi_device_handle_t **recv_dev);
  mesh_abi_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  mesh_abi_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                   void **mhandle);
  mesh_abi_result_t (*deregMr)(void *comm, void *mhandle);
  mesh_abi_result_t (*isend)(void *send_comm, void *data, size_t size, int tag, void *mhandle, void **request);
  mesh_abi_result_t (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                             void **request);
  mesh_abi_result_t (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
  mesh_abi_result_t (*test)(void *request, int *done, int *sizes);
  mesh_abi_result_t (*closeSend)(void *send_comm);
  mesh_abi_result_t (*closeRecv)(void *recv_comm);
  mesh_abi_result_t (*closeListen)(void *listen_comm);
  mesh_abi_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  mesh_abi_result_t (*irecvConsumed)(void *recv_comm, int n, void *request);
  mesh_abi_result_t (*makeVDevice)(int *d, mesh_abi_vdevice_props_t *props);
} mesh_abi_net_v9_t;

typedef struct {
  const char *name;
  mesh_abi_result_t (*init)(mesh_abi_logger_t logger, mesh_abi_profiler_t profiler);
  mesh_abi_result_t (*devices)(int *ndev);
  mesh_abi_result_t (*getProperties)(int dev, mesh_abi_properties_v10_t *props);
  mesh_abi_result_t (*listen)(int dev, void *handle, void **listen_comm);
  mesh_abi_result_t (*connect)(int dev, mesh_abi_comm_config_t *config, void *handle, void **send_comm,
                               mesh_abi_device_handle_t **send_dev);
  mesh_abi_result_t (*accept)(void *listen_comm, void **recv_comm, mesh_abi_device_handle_t **recv_dev);
  mesh_abi_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  mesh_abi_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                   void **mhandle);
  mesh_abi_result_t (*deregMr)(void *comm, void *mhandle);
  mesh_abi_result_t (*isend)(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                             void **request);
  mesh_abi_result_t (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                             void **phandles, void **request);
  mesh_abi_result_t (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
  mesh_abi_result_t (*test)(void *request, int *done, int *sizes);
  mesh_abi_result_t (*closeSend)(void *send_comm);
  mesh_abi_result_t (*closeRecv)(void *recv_comm);
  mesh_abi_result_t (*closeListen)(void *listen_comm);
  mesh_abi_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  mesh_abi_result_t (*irecvConsumed)(void *recv_comm, int n, void *request);
  mesh_abi_result_t (*makeVDevice)(int *d, mesh_abi_vdevice_props_t *props);
} mesh_abi_net_v10_t;

typedef struct {
  const char *name;
  mesh_abi_result_t (*init)(void **ctx, uint64_t comm_id, mesh_abi_comm_config_t *config,
                            mesh_abi_logger_t logger, mesh_abi_profiler_t profiler);
  mesh_abi_result_t (*devices)(int *ndev);
  mesh_abi_result_t (*getProperties)(int dev, mesh_abi_properties_v11_t *props);
  mesh_abi_result_t (*listen)(void *ctx, int dev, void *handle, void **listen_comm);
  mesh_abi_result_t (*connect)(void *ctx, int dev, void *handle, void **send_comm,
                               mesh_abi_device_handle_t **send_dev);
  mesh_abi_result_t (*accept)(void *listen_comm, void **recv_comm, mesh_abi_device_handle_t **recv_dev);
  mesh_abi_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  mesh_abi_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                   void **mhandle);
  mesh_abi_result_t (*deregMr)(void *comm, void *mhandle);
  mesh_abi_result_t (*isend)(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                             void **request);
  mesh_abi_result_t (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                             void **phandles, void **request);
  mesh_abi_result_t (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
  mesh_abi_result_t (*test)(void *request, int *done, int *sizes);
  mesh_abi_result_t (*closeSend)(void *send_comm);
  mesh_abi_result_t (*closeRecv)(void *recv_comm);
  mesh_abi_result_t (*closeListen)(void *listen_comm);
  mesh_abi_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  mesh_abi_result_t (*irecvConsumed)(void *recv_comm, int n, void *request);
  mesh_abi_result_t (*makeVDevice)(int *d, mesh_abi_vdevice_props_t *props);
  mesh_abi_result_t (*finalize)(void *ctx);
  mesh_abi_result_t (*setNetAttr)(void *ctx, mesh_abi_net_attr_t *attr);
} mesh_abi_net_v11_t;

#endif /* MESH_ABI_H */
