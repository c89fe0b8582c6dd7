// SPDX-License-Identifier: MIT
// Host memory as the NHI's DMA engine sees it: an abstract interface, so a
// standalone run uses local_memory and odl-linkd forwards DMA to QEMU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace odl::model {

/// DMA target. Functional only: the NHI accounts PCIe timing itself.
class host_memory {
public:
    virtual ~host_memory() = default;
    /// Returns false on a DMA fault (address not backed).
    virtual bool dma_read(std::uint64_t addr, void* dst, std::size_t len) = 0;
    virtual bool dma_write(std::uint64_t addr, const void* src, std::size_t len) = 0;
};

/// Sparse host memory in 4 KiB pages with a bump allocator (standalone runs).
/// Accesses within one page of the flat table (every access of the
/// benchmark's per-frame path) are inline; the rest go through the map.
class local_memory final : public host_memory {
public:
    static constexpr std::uint64_t page_bytes = 4096;
    /// Allocations start at @base; address 0 stays invalid on purpose.
    explicit local_memory(std::uint64_t base = 0x100000000ull)
        : m_next(base), m_base_pfn(base / page_bytes) {}

    /// Reserves @len bytes aligned to @align and returns the DMA address.
    std::uint64_t alloc(std::size_t len, std::size_t align = 64);

    bool dma_read(std::uint64_t addr, void* dst, std::size_t len) override {
        if (page* p = flat(addr, len)) {
            std::memcpy(dst, p->data() + addr % page_bytes, len);
            return true;
        }
        return read_slow(addr, dst, len);
    }
    bool dma_write(std::uint64_t addr, const void* src, std::size_t len) override {
        if (!cpu_write(addr, src, len)) return false;
        if (m_on_write) m_on_write(addr, len);
        return true;
    }
    /// A store by the host CPU itself: like dma_write() but without the
    /// on_write() notification (the CPU knows what it wrote).
    bool cpu_write(std::uint64_t addr, const void* src, std::size_t len) {
        if (page* p = flat(addr, len)) {
            std::memcpy(p->data() + addr % page_bytes, src, len);
            return true;
        }
        return write_slow(addr, src, len);
    }
    std::uint64_t bytes_backed() const { return m_pages.size() * page_bytes; }
    /// Called after every successful DMA write: lets a polling CPU model
    /// notice descriptor write-backs without simulating every poll.
    void on_write(std::function<void(std::uint64_t addr, std::size_t len)> fn) {
        m_on_write = std::move(fn);
    }

private:
    using page = std::array<std::uint8_t, page_bytes>;
    page* find(std::uint64_t pfn);
    bool read_slow(std::uint64_t addr, void* dst, std::size_t len);
    bool write_slow(std::uint64_t addr, const void* src, std::size_t len);
    std::uint64_t m_next;
    std::uint64_t m_first = 0;
    std::uint64_t m_base_pfn;
    std::map<std::uint64_t, std::unique_ptr<page>> m_pages;
    /// Direct lookup for pages from the base on (allocations are contiguous).
    std::vector<page*> m_flat;
    /// The flat-table page holding [addr, addr + len), or null.
    page* flat(std::uint64_t addr, std::size_t len) const {
        const std::uint64_t i = addr / page_bytes - m_base_pfn;
        return i < m_flat.size() && addr % page_bytes + len <= page_bytes ? m_flat[i] : nullptr;
    }
    std::function<void(std::uint64_t, std::size_t)> m_on_write;
};

}  // namespace odl::model
