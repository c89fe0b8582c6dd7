// SPDX-License-Identifier: MIT
// A caller's view of one exported ncclNetPlugin_vN table (the tests and
// odl-plugin-collective drive the plugin through it): every call goes
// through that version's own signature, behind one interface the scenarios use.
#pragma once

#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "nccl/net.h"

namespace odl::plugin::caller {

/// The properties every version has, plus the newer ones (0 when absent).
struct common_props {
    std::string name;
    int ptr_support = 0, max_recvs = 0, speed = 0, vdevs = 0, max_multi = 0;
    size_t max_p2p = 0;
    int rail = 0;
};

class net_api {
public:
    virtual ~net_api() = default;
    virtual int version() const = 0;
    virtual const char* name() const = 0;
    virtual ncclResult_t init(ncclDebugLogger_t log) = 0;
    virtual ncclResult_t finalize() = 0;  ///< v11+; older versions: nothing to do
    virtual ncclResult_t devices(int* n) = 0;
    virtual ncclResult_t props(int dev, common_props* p) = 0;
    virtual ncclResult_t listen(int dev, void* h, void** lc) = 0;
    virtual ncclResult_t connect(int dev, void* h, void** sc) = 0;
    virtual ncclResult_t accept(void* lc, void** rc) = 0;
    virtual ncclResult_t reg_mr(void* c, void* d, size_t n, int type, void** mh) = 0;
    virtual ncclResult_t dereg_mr(void* c, void* mh) = 0;
    virtual ncclResult_t isend(void* c, void* d, size_t n, int tag, void* mh, void** req) = 0;
    virtual ncclResult_t irecv(void* c, int n, void** d, size_t* sizes, int* tags, void** mh, void** req) = 0;
    virtual ncclResult_t iflush(void* c, void* d, int size, void* mh, void** req) = 0;
    virtual ncclResult_t test(void* req, int* done, int* sizes) = 0;
    virtual ncclResult_t close_send(void* c) = 0;
    virtual ncclResult_t close_recv(void* c) = 0;
    virtual ncclResult_t close_listen(void* c) = 0;
};

template <int V, class Table, class Props>
class net_api_impl final : public net_api {
public:
    explicit net_api_impl(const Table* t) : m_t(t) {}
    int version() const override { return V; }
    const char* name() const override { return m_t->name; }
    ncclResult_t init(ncclDebugLogger_t log) override {
        if constexpr (V >= 11) return m_t->init(&m_ctx, 0x1234, nullptr, log, nullptr);
        else if constexpr (V == 10) return m_t->init(log, nullptr);
        else return m_t->init(log);
    }
    ncclResult_t finalize() override {
        if constexpr (V >= 11) return m_t->finalize(m_ctx);
        else return ncclSuccess;
    }
    ncclResult_t devices(int* n) override { return m_t->devices(n); }
    ncclResult_t props(int dev, common_props* out) override {
        Props p;
        std::memset(&p, 0x5a, sizeof(p));
        const ncclResult_t rc = m_t->getProperties(dev, &p);
        if (rc != ncclSuccess) return rc;
        out->name = p.name ? p.name : "";
        out->ptr_support = p.ptrSupport;
        out->max_recvs = p.maxRecvs;
        out->speed = p.speed;
        if constexpr (V >= 9) {
            out->vdevs = p.vProps.ndevs;
            out->max_p2p = p.maxP2pBytes;
        }
        if constexpr (V >= 11) out->max_multi = p.maxMultiRequestSize;
        if constexpr (V >= 12) out->rail = p.railId;
        return rc;
    }
    ncclResult_t listen(int dev, void* h, void** lc) override {
        if constexpr (V >= 11) return m_t->listen(m_ctx, dev, h, lc);
        else return m_t->listen(dev, h, lc);
    }
    ncclResult_t connect(int dev, void* h, void** sc) override {
        ncclNetDeviceHandle_v8_t* dc = nullptr;  // one layout in v8-v12
        if constexpr (V >= 11) return m_t->connect(m_ctx, dev, h, sc, &dc);
        else if constexpr (V == 10) {
            ncclNetCommConfig_v10_t cfg{NCCL_NET_TRAFFIC_CLASS_UNDEF};
            return m_t->connect(dev, &cfg, h, sc, &dc);
        } else return m_t->connect(dev, h, sc, &dc);
    }
    ncclResult_t accept(void* lc, void** rc) override {
        ncclNetDeviceHandle_v8_t* dc = nullptr;  // one layout in v8-v12
        return m_t->accept(lc, rc, &dc);
    }
    ncclResult_t reg_mr(void* c, void* d, size_t n, int type, void** mh) override { return m_t->regMr(c, d, n, type, mh); }
    ncclResult_t dereg_mr(void* c, void* mh) override { return m_t->deregMr(c, mh); }
    ncclResult_t isend(void* c, void* d, size_t n, int tag, void* mh, void** req) override {
        if constexpr (V >= 10) return m_t->isend(c, d, n, tag, mh, nullptr, req);
        else if constexpr (V == 9) return m_t->isend(c, d, n, tag, mh, req);
        else return m_t->isend(c, d, int(n), tag, mh, req);
    }
    ncclResult_t irecv(void* c, int n, void** d, size_t* sizes, int* tags, void** mh, void** req) override {
        if constexpr (V >= 10) {
            void* ph[8] = {};
            return m_t->irecv(c, n, d, sizes, tags, mh, ph, req);
        } else if constexpr (V == 9) {
            return m_t->irecv(c, n, d, sizes, tags, mh, req);
        } else {
            int narrow[8] = {};
            for (int i = 0; i < n && i < 8; ++i) narrow[i] = int(sizes[i]);
            return m_t->irecv(c, n, d, narrow, tags, mh, req);
        }
    }
    ncclResult_t iflush(void* c, void* d, int size, void* mh, void** req) override {
        return m_t->iflush(c, 1, &d, &size, &mh, req);
    }
    ncclResult_t test(void* req, int* done, int* sizes) override { return m_t->test(req, done, sizes); }
    ncclResult_t close_send(void* c) override { return m_t->closeSend(c); }
    ncclResult_t close_recv(void* c) override { return m_t->closeRecv(c); }
    ncclResult_t close_listen(void* c) override { return m_t->closeListen(c); }

private:
    const Table* m_t;
    void* m_ctx = nullptr;
};

/// dlopen()s the plugin and picks one version's table; closes it on destruction.
class loaded_plugin {
public:
    loaded_plugin(const std::string& path, int version) {
        m_lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!m_lib) throw std::runtime_error(std::string("dlopen: ") + dlerror());
        const std::string sym = "ncclNetPlugin_v" + std::to_string(version);
        void* t = dlsym(m_lib, sym.c_str());
        if (!t) throw std::runtime_error("missing " + sym);
        switch (version) {
        case 8: m_api = std::make_unique<net_api_impl<8, ncclNet_v8_t, ncclNetProperties_v8_t>>(static_cast<ncclNet_v8_t*>(t)); break;
        case 9: m_api = std::make_unique<net_api_impl<9, ncclNet_v9_t, ncclNetProperties_v9_t>>(static_cast<ncclNet_v9_t*>(t)); break;
        case 10: m_api = std::make_unique<net_api_impl<10, ncclNet_v10_t, ncclNetProperties_v10_t>>(static_cast<ncclNet_v10_t*>(t)); break;
        case 11: m_api = std::make_unique<net_api_impl<11, ncclNet_v11_t, ncclNetProperties_v11_t>>(static_cast<ncclNet_v11_t*>(t)); break;
        case 12: m_api = std::make_unique<net_api_impl<12, ncclNet_v12_t, ncclNetProperties_v12_t>>(static_cast<ncclNet_v12_t*>(t)); break;
        default: throw std::runtime_error("no such version");
        }
    }
    ~loaded_plugin() {
        m_api.reset();
        if (m_lib) dlclose(m_lib);
    }
    loaded_plugin(const loaded_plugin&) = delete;
    loaded_plugin& operator=(const loaded_plugin&) = delete;
    net_api& api() { return *m_api; }

private:
    void* m_lib = nullptr;
    std::unique_ptr<net_api> m_api;
};

}  // namespace odl::plugin::caller
