// SPDX-License-Identifier: MIT
// Host memory as the NHI's DMA engine sees it: an abstract interface, so a
// standalone run uses local_memory and odl-linkd forwards DMA to QEMU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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
class local_memory : public host_memory {
public:
    static constexpr std::uint64_t page_bytes = 4096;
    /// Allocations start at @base; address 0 stays invalid on purpose.
    explicit local_memory(std::uint64_t base = 0x100000000ull)
        : m_next(base), m_base_pfn(base / page_bytes) {}

    /// Reserves @len bytes aligned to @align and returns the DMA address.
    std::uint64_t alloc(std::size_t len, std::size_t align = 64);

    bool dma_read(std::uint64_t addr, void* dst, std::size_t len) override;
    bool dma_write(std::uint64_t addr, const void* src, std::size_t len) override;
    std::uint64_t bytes_backed() const { return m_pages.size() * page_bytes; }
    /// Called after every successful DMA write: lets a polling CPU model
    /// notice descriptor write-backs without simulating every poll.
    void on_write(std::function<void(std::uint64_t addr, std::size_t len)> fn) {
        m_on_write = std::move(fn);
    }

private:
    using page = std::array<std::uint8_t, page_bytes>;
    page* find(std::uint64_t pfn);
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
