// SPDX-License-Identifier: MIT
// Sparse page-backed host memory for standalone runs.
#include <algorithm>
#include <cstring>

#include "odl/model/nhi/host_memory.h"

namespace odl::model {

std::uint64_t local_memory::alloc(std::size_t len, std::size_t align) {
    if (m_first == 0) m_first = m_next;
    m_next = (m_next + align - 1) / align * align;
    const std::uint64_t a = m_next;
    m_next += len;
    for (std::uint64_t p = a / page_bytes; p <= (a + len - 1) / page_bytes; ++p)
        if (!m_pages.count(p)) {
            auto* pg = m_pages.emplace(p, std::make_unique<page>(page{})).first->second.get();
            if (p >= m_base_pfn && p - m_base_pfn < (std::uint64_t{1} << 24)) {
                if (m_flat.size() <= p - m_base_pfn) m_flat.resize(p - m_base_pfn + 1, nullptr);
                m_flat[p - m_base_pfn] = pg;
            }
        }
    return a;
}

local_memory::page* local_memory::find(std::uint64_t pfn) {
    if (pfn - m_base_pfn < m_flat.size()) {
        if (page* p = m_flat[pfn - m_base_pfn]) return p;
    }
    auto it = m_pages.find(pfn);
    return it == m_pages.end() ? nullptr : it->second.get();
}

bool local_memory::read_slow(std::uint64_t addr, void* dst, std::size_t len) {
    auto* out = static_cast<std::uint8_t*>(dst);
    while (len > 0) {
        page* p = find(addr / page_bytes);
        if (!p) return false;
        const std::size_t off = addr % page_bytes;
        const std::size_t n = std::min<std::size_t>(len, page_bytes - off);
        std::memcpy(out, p->data() + off, n);
        out += n;
        addr += n;
        len -= n;
    }
    return true;
}

bool local_memory::write_slow(std::uint64_t addr, const void* src, std::size_t len) {
    const auto* in = static_cast<const std::uint8_t*>(src);
    while (len > 0) {
        page* p = find(addr / page_bytes);
        if (!p) return false;
        const std::size_t off = addr % page_bytes;
        const std::size_t n = std::min<std::size_t>(len, page_bytes - off);
        std::memcpy(p->data() + off, in, n);
        in += n;
        addr += n;
        len -= n;
    }
    return true;
}

}  // namespace odl::model
