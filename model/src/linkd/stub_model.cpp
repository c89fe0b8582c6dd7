// SPDX-License-Identifier: MIT
// TEST DOUBLE register file for odl-linkd plumbing; see stub_model.h.
#include "stub_model.h"

#include "odl/wire/nhi_regs.h"

namespace odl::model::linkd {

std::uint32_t stub_nhi::read32(std::uint32_t off) {
    if (off == ODL_NHI_REG_CAPS) return ODL_NHI_HOP_COUNT;  // version 0
    auto it = m_regs.find(off);
    const std::uint32_t v = it == m_regs.end() ? 0 : it->second;
    // Status is clear-on-read unless DISABLE_AUTO_CLEAR is set (MSI mode).
    if (off >= ODL_NHI_REG_NOTIFY_BASE && off < ODL_NHI_REG_INT_CLEAR &&
        !(m_regs[ODL_NHI_REG_DMA_MISC] & ODL_NHI_DMA_MISC_DISABLE_AUTO_CLEAR))
        m_regs[off] = 0;
    return v;
}

void stub_nhi::write32(std::uint32_t off, std::uint32_t val) {
    if (off == ODL_NHI_REG_CAPS) return;  // read-only
    if (off >= ODL_NHI_REG_INT_CLEAR && off < ODL_NHI_REG_INT_CLEAR + 8) {
        m_regs[off - 8] &= ~val;  // W1C of the status register
        return;
    }
    if (off >= ODL_NHI_REG_INT_MASK_CLEAR && off < ODL_NHI_REG_INT_MASK_CLEAR + 8) {
        m_regs[off - 8] &= ~val;  // W1C of the enable register
        return;
    }
    if (off == ODL_NHI_REG_RESET) return;  // HRR completes at once
    m_regs[off] = val;
}

std::uint64_t stub_nhi::mmio_read(std::uint64_t offset, unsigned size) {
    const auto base = static_cast<std::uint32_t>(offset & ~std::uint64_t{3});
    std::uint64_t v = read32(base);
    if (size == 8) v |= std::uint64_t{read32(base + 4)} << 32;
    const unsigned shift = static_cast<unsigned>(offset & 3) * 8;
    v >>= shift;
    return size >= 8 ? v : v & ((std::uint64_t{1} << (size * 8)) - 1);
}

void stub_nhi::mmio_write(std::uint64_t offset, unsigned size, std::uint64_t value) {
    const auto base = static_cast<std::uint32_t>(offset & ~std::uint64_t{3});
    if (size == 8) {
        write32(base, static_cast<std::uint32_t>(value));
        write32(base + 4, static_cast<std::uint32_t>(value >> 32));
        return;
    }
    if (size == 4) {
        write32(base, static_cast<std::uint32_t>(value));
        return;
    }
    // Sub-dword writes merge into the stored dword.
    const unsigned shift = static_cast<unsigned>(offset & 3) * 8;
    const std::uint32_t mask = ((size == 1 ? 0xffu : 0xffffu) << shift);
    const std::uint32_t old = m_regs.count(base) ? m_regs[base] : 0;
    write32(base, (old & ~mask) | ((static_cast<std::uint32_t>(value) << shift) & mask));
}

}  // namespace odl::model::linkd
