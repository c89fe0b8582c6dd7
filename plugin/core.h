// SPDX-License-Identifier: MIT
// The plugin's one implementation, with the newest ABI's semantics (per-comm
// init context, size_t sizes, v12 properties). shims.cpp adapts it to each
// exported ncclNetPlugin_vN table.
#pragma once

#include "nccl/net.h"

namespace odl::plugin {

struct pending_connect;

/// Called once per communicator (v11+) or once per load (v8-v10, ctx NULL).
ncclResult_t core_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t log);
/// Ends one init; the last one closes every link.
ncclResult_t core_finalize(void* ctx);
ncclResult_t core_devices(int* ndev);
ncclResult_t core_get_properties(int dev, ncclNetProperties_v12_t* props);
ncclResult_t core_listen(int dev, void* handle, void** listen_comm);
ncclResult_t core_connect(int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v12_t** dev_comm);
ncclResult_t core_accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v12_t** dev_comm);
ncclResult_t core_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t core_reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
ncclResult_t core_dereg_mr(void* comm, void* mhandle);
ncclResult_t core_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                        void** request);
ncclResult_t core_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                        void** phandles, void** request);
ncclResult_t core_iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
ncclResult_t core_test(void* request, int* done, int* sizes);
ncclResult_t core_close_send(void* send_comm);
ncclResult_t core_close_recv(void* recv_comm);
ncclResult_t core_close_listen(void* listen_comm);
ncclResult_t core_get_device_mr(void* comm, void* mhandle, void** dptr_mhandle);
ncclResult_t core_irecv_consumed(void* recv_comm, int n, void* request);
ncclResult_t core_set_net_attr(void* ctx, ncclNetAttr_v12_t* attr);

/// From a link's progress thread that received a CONNECT. False: no such
/// listener (any more); the connection's data is for nobody.
bool enqueue_connect(const pending_connect& p);

}  // namespace odl::plugin
