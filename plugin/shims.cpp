// SPDX-License-Identifier: MIT
// The exported tables ncclNetPlugin_v8 ... _v12: each entry is the core
// function itself or a few-line adapter (int <-> size_t, no ctx or config,
// older property structs filled from the core's v12 ones).
#include <cstring>

#include "comm.h"
#include "core.h"

#define ODL_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace odl::plugin {
namespace {

constexpr const char* kName = "ODL";

template <class P>
void copy_v8_fields(P* out, const ncclNetProperties_v12_t& in) {
    out->name = in.name;
    out->pciPath = in.pciPath;
    out->guid = in.guid;
    out->ptrSupport = in.ptrSupport;
    out->regIsGlobal = in.regIsGlobal;
    out->speed = in.speed;
    out->port = in.port;
    out->latency = in.latency;
    out->maxComms = in.maxComms;
    out->maxRecvs = in.maxRecvs;
    out->netDeviceType = in.netDeviceType;
    out->netDeviceVersion = in.netDeviceVersion;
}

template <class P>
void copy_v9_fields(P* out, const ncclNetProperties_v12_t& in) {
    copy_v8_fields(out, in);
    out->forceFlush = in.forceFlush;
    out->vProps.ndevs = in.vProps.ndevs < NCCL_NET_MAX_DEVS_PER_NIC_V9 ? in.vProps.ndevs : NCCL_NET_MAX_DEVS_PER_NIC_V9;
    for (int i = 0; i < out->vProps.ndevs; ++i) out->vProps.devs[i] = in.vProps.devs[i];
    out->maxP2pBytes = in.maxP2pBytes;
    out->maxCollBytes = in.maxCollBytes;
}

template <class P, class F>
ncclResult_t props_via_core(int dev, P* out, F copy) {
    if (!out) return ncclInternalError;
    ncclNetProperties_v12_t p;
    const ncclResult_t rc = core_get_properties(dev, &p);
    if (rc != ncclSuccess) return rc;
    std::memset(out, 0, sizeof(*out));
    copy(out, p);
    return ncclSuccess;
}

ncclResult_t props_v8(int dev, ncclNetProperties_v8_t* out) {
    return props_via_core(dev, out, copy_v8_fields<ncclNetProperties_v8_t>);
}
ncclResult_t props_v9(int dev, ncclNetProperties_v9_t* out) {
    return props_via_core(dev, out, copy_v9_fields<ncclNetProperties_v9_t>);
}
ncclResult_t props_v11(int dev, ncclNetProperties_v11_t* out) {
    return props_via_core(dev, out, [](ncclNetProperties_v11_t* o, const ncclNetProperties_v12_t& in) {
        copy_v9_fields(o, in);
        o->maxMultiRequestSize = in.maxMultiRequestSize;
    });
}

// v6-v10 have no finalize: NCCL inits once per load and the library's
// static state closes the links when NCCL dlclose()s it.
ncclResult_t init_v8(ncclDebugLogger_t log) { return core_init(nullptr, 0, log); }
ncclResult_t init_v10(ncclDebugLogger_t log, ncclProfilerCallback_t) { return core_init(nullptr, 0, log); }
ncclResult_t init_v11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t*, ncclDebugLogger_t log,
                      ncclProfilerCallback_t) {
    if (!ctx) return ncclInternalError;
    return core_init(ctx, comm_id, log);
}

ncclResult_t listen_v11(void*, int dev, void* handle, void** listen_comm) { return core_listen(dev, handle, listen_comm); }
ncclResult_t connect_v8(int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v8_t** dc) {
    return core_connect(dev, handle, send_comm, dc);
}
ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t*, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v10_t** dc) {
    return core_connect(dev, handle, send_comm, dc);
}
ncclResult_t connect_v11(void*, int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v11_t** dc) {
    return core_connect(dev, handle, send_comm, dc);
}

ncclResult_t isend_v8(void* c, void* data, int size, int tag, void* mh, void** req) {
    if (size < 0) return ncclInternalError;
    return core_isend(c, data, size_t(size), tag, mh, nullptr, req);
}
ncclResult_t isend_v9(void* c, void* data, size_t size, int tag, void* mh, void** req) {
    return core_isend(c, data, size, tag, mh, nullptr, req);
}
ncclResult_t irecv_v8(void* c, int n, void** data, int* sizes, int* tags, void** mh, void** req) {
    if (n < 1 || n > kMaxRecvs || !sizes) return ncclInternalError;
    size_t wide[kMaxRecvs];
    for (int i = 0; i < n; ++i) {
        if (sizes[i] < 0) return ncclInternalError;
        wide[i] = size_t(sizes[i]);
    }
    return core_irecv(c, n, data, wide, tags, mh, nullptr, req);
}
ncclResult_t irecv_v9(void* c, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
    return core_irecv(c, n, data, sizes, tags, mh, nullptr, req);
}

}  // namespace
}  // namespace odl::plugin

using namespace odl::plugin;

ODL_PLUGIN_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    kName, init_v8, core_devices, props_v8, core_listen, connect_v8, core_accept, core_reg_mr,
    core_reg_mr_dmabuf, core_dereg_mr, isend_v8, irecv_v8, core_iflush, core_test, core_close_send,
    core_close_recv, core_close_listen, core_get_device_mr, core_irecv_consumed,
};

ODL_PLUGIN_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    kName, init_v8, core_devices, props_v9, core_listen, connect_v8, core_accept, core_reg_mr,
    core_reg_mr_dmabuf, core_dereg_mr, isend_v9, irecv_v9, core_iflush, core_test, core_close_send,
    core_close_recv, core_close_listen, core_get_device_mr, core_irecv_consumed, nullptr,
};

ODL_PLUGIN_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    kName, init_v10, core_devices, props_v9, core_listen, connect_v10, core_accept, core_reg_mr,
    core_reg_mr_dmabuf, core_dereg_mr, core_isend, core_irecv, core_iflush, core_test, core_close_send,
    core_close_recv, core_close_listen, core_get_device_mr, core_irecv_consumed, nullptr,
};

ODL_PLUGIN_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    kName, init_v11, core_devices, props_v11, listen_v11, connect_v11, core_accept, core_reg_mr,
    core_reg_mr_dmabuf, core_dereg_mr, core_isend, core_irecv, core_iflush, core_test, core_close_send,
    core_close_recv, core_close_listen, core_get_device_mr, core_irecv_consumed, nullptr,
    core_finalize, core_set_net_attr,
};

ODL_PLUGIN_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    kName, init_v11, core_devices, core_get_properties, listen_v11, connect_v11, core_accept, core_reg_mr,
    core_reg_mr_dmabuf, core_dereg_mr, core_isend, core_irecv, core_iflush, core_test, core_close_send,
    core_close_recv, core_close_listen, core_get_device_mr, core_irecv_consumed, nullptr,
    core_finalize, core_set_net_attr,
};
