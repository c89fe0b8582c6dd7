// SPDX-License-Identifier: MIT
// The stable C API: a thin shim over odl::device_impl that catches every
// exception at the boundary and turns it into a status plus odl_last_error().
#include <cstring>
#include <cstddef>
#include <algorithm>
#include <chrono>
#include <thread>
#include <new>

#include "backend.h"
#include "device.h"
#include "clock.h"
#include "error.h"

using odl::clear_last_error;
using odl::set_last_error;

namespace {

template <typename F>
int guarded(F&& f) noexcept {
    try {
        clear_last_error();
        return f();
    } catch (const odl::error& e) {
        return set_last_error(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return set_last_error(ODL_ERR_NOMEM, "out of memory");
    } catch (const std::exception& e) {
        return set_last_error(ODL_ERR_IO, e.what());
    } catch (...) {
        return set_last_error(ODL_ERR_IO, "unexpected internal error");
    }
}

bool bad_dev(const odl_dev* d) { return !d || !d->dev; }

}  // namespace

extern "C" {

const char* odl_version(void) { return ODL_VERSION_STRING; }

const char* odl_backends(void) { return odl::backend_names(); }

int odl_device_count(const char* backend, uint32_t* count) {
    return guarded([&] {
        if (!backend || !count) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        *count = odl::device_count(backend);
        return int(ODL_OK);
    });
}

void odl_open_params_init(struct odl_open_params* p) {
    if (!p) return;
    *p = odl_open_params{};
    p->struct_size = sizeof(*p);
    p->backend = "loopback";
    p->index = 0;
    p->flags = 0;
    p->num_streams = 1;
    p->window_frames = 512;
    p->max_msg_bytes = 64ull << 20;
    p->max_posted = 1024;
    p->connect_timeout_ns = 10'000'000'000ull;
    p->peer_timeout_ns = 1'000'000'000ull;
    p->node_name = nullptr;
}

int odl_open(const struct odl_open_params* p, struct odl_dev** out) {
    return guarded([&] {
        if (!p || !out) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        *out = nullptr;
        odl::open_config cfg = odl::make_config(*p);
        auto dev = std::make_unique<odl::device_impl>(odl::open_backend(cfg), cfg);
        dev->wait_until_up();
        *out = new odl_dev{std::move(dev)};
        return int(ODL_OK);
    });
}

int odl_open_pair(const struct odl_open_params* p, struct odl_dev** a, struct odl_dev** b) {
    return guarded([&] {
        if (!p || !a || !b) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        *a = *b = nullptr;
        odl::open_config cfg = odl::make_config(*p);
        const bool sim = cfg.backend == "sim";
        if (cfg.backend != "loopback" && !sim)
            return set_last_error(ODL_ERR_INVAL, "odl_open_pair() is for the loopback and sim backends");
        auto [ba, bb] = sim ? odl::open_sim_backend_pair(cfg) : odl::open_loopback_backend_pair(cfg);
        auto da = std::make_unique<odl::device_impl>(std::move(ba), cfg);
        auto db = std::make_unique<odl::device_impl>(std::move(bb), cfg);
        // Both ends live in this thread: drive the handshake of both. The
        // sim link comes up on the model's clock, paced to the wall clock.
        const uint64_t start = odl::now_ns();
        odl_completion c;
        for (unsigned i = 0;; ++i) {
            da->poll(&c, 0);
            db->poll(&c, 0);
            odl_dev_info ia{}, ib{};
            da->query(ia);
            db->query(ib);
            if (ia.link_state == ODL_LINK_UP && ib.link_state == ODL_LINK_UP) {
                *a = new odl_dev{std::move(da)};
                *b = new odl_dev{std::move(db)};
                return int(ODL_OK);
            }
            for (const odl_dev_info* info : {&ia, &ib})
                if (info->link_state != ODL_LINK_CONNECTING && info->link_state != ODL_LINK_UP)
                    return set_last_error(ODL_ERR_IO, fmt::format("{} {}: end {} failed while connecting (link state {})",
                                                                  cfg.backend, cfg.index, info == &ia ? 'A' : 'B',
                                                                  info->link_state));
            if (!sim && i >= 1000) return set_last_error(ODL_ERR_IO, "in-process loopback handshake did not complete");
            if (sim && odl::now_ns() - start >= cfg.connect_timeout_ns)
                return set_last_error(ODL_ERR_TIMEOUT, fmt::format("sim {}: the pair did not come up within {:.1f} s",
                                                                   cfg.index, double(cfg.connect_timeout_ns) / 1e9));
            if (sim) std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    });
}

int odl_close(struct odl_dev* dev) {
    return guarded([&] {
        delete dev;
        return int(ODL_OK);
    });
}

int odl_query(struct odl_dev* dev, struct odl_dev_info* info) {
    return guarded([&] {
        if (bad_dev(dev) || !info) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        if (info->struct_size < sizeof(*info))
            return set_last_error(ODL_ERR_INVAL, "odl_dev_info.struct_size too small");
        dev->dev->query(*info);
        return int(ODL_OK);
    });
}

int odl_reg_mr(struct odl_dev* dev, void* addr, size_t len, struct odl_mr** mr) {
    return guarded([&] {
        if (bad_dev(dev) || !mr) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        *mr = dev->dev->reg_mr(addr, len);
        return int(ODL_OK);
    });
}

int odl_dereg_mr(struct odl_dev* dev, struct odl_mr* mr) {
    return guarded([&] {
        if (bad_dev(dev) || !mr) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        return dev->dev->dereg_mr(mr);
    });
}

int odl_post_send(struct odl_dev* dev, uint32_t stream, uint32_t tag, const void* buf, size_t len,
                  struct odl_mr* mr, uint64_t ctx) {
    if (bad_dev(dev)) return set_last_error(ODL_ERR_INVAL, "NULL device");
    return guarded([&] { return dev->dev->post_send(stream, tag, buf, len, mr, ctx); });
}

int odl_post_recv(struct odl_dev* dev, uint32_t stream, uint32_t tag, void* buf, size_t cap,
                  struct odl_mr* mr, uint64_t ctx) {
    if (bad_dev(dev)) return set_last_error(ODL_ERR_INVAL, "NULL device");
    return guarded([&] { return dev->dev->post_recv(stream, tag, buf, cap, mr, ctx); });
}

int odl_cancel(struct odl_dev* dev, uint32_t stream, uint64_t ctx) {
    if (bad_dev(dev)) return set_last_error(ODL_ERR_INVAL, "NULL device");
    return guarded([&] { return dev->dev->cancel(stream, ctx); });
}

int odl_discard(struct odl_dev* dev, uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags) {
    if (bad_dev(dev)) return set_last_error(ODL_ERR_INVAL, "NULL device");
    return guarded([&] { return dev->dev->discard(stream, tag, mask, flags); });
}

int odl_poll(struct odl_dev* dev, struct odl_completion* comps, size_t max, size_t* n) {
    if (bad_dev(dev) || !n || (!comps && max)) return set_last_error(ODL_ERR_INVAL, "NULL argument");
    return guarded([&] {
        *n = dev->dev->poll(comps, max);
        return int(ODL_OK);
    });
}

int odl_wait(struct odl_dev* dev, struct odl_completion* comps, size_t max, size_t* n, uint64_t timeout_ns) {
    if (bad_dev(dev) || !n || !comps || !max) return set_last_error(ODL_ERR_INVAL, "NULL argument or max == 0");
    return guarded([&] { return dev->dev->wait(comps, max, n, timeout_ns); });
}

int odl_get_stats(struct odl_dev* dev, struct odl_stats* stats) {
    return guarded([&] {
        if (bad_dev(dev) || !stats) return set_last_error(ODL_ERR_INVAL, "NULL argument");
        // API version 3's struct ends at rx_csum_errors.
        constexpr size_t v3 = offsetof(odl_stats, model_frames);
        if (stats->struct_size < v3) return set_last_error(ODL_ERR_INVAL, "odl_stats.struct_size too small");
        odl_stats all{};
        dev->dev->stats(all);
        const uint32_t size = stats->struct_size;
        std::memcpy(reinterpret_cast<char*>(stats) + sizeof(size), reinterpret_cast<const char*>(&all) + sizeof(size),
                    std::min<size_t>(size, sizeof(all)) - sizeof(size));
        return int(ODL_OK);
    });
}

}  // extern "C"
