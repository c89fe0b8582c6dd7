// SPDX-License-Identifier: MIT
// Guest RAM shared by a QEMU device (MEM_MAP, include/odl/wire/linkd.h):
// odl-linkd maps each range and serves the model's DMA inside it with a
// memcpy instead of a DMA_READ/WRITE round trip to QEMU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace odl::model::linkd {

class shared_ram {
public:
    shared_ram() = default;
    ~shared_ram() { clear(); }
    shared_ram(const shared_ram&) = delete;
    shared_ram& operator=(const shared_ram&) = delete;

    /// Maps [@offset, @offset + @len) of @fd at bus address @addr. The fd
    /// stays owned by the caller (the mapping keeps the memory alive).
    /// False with @err when the range is refused: bad alignment, overlap
    /// with a mapped range, beyond the file's end, too many, mmap failed.
    bool add(int fd, std::uint64_t addr, std::uint64_t len, std::uint64_t offset,
             std::string& err);
    /// Unmaps everything.
    void clear();

    /// Copies @len bytes at bus address @addr from/to guest RAM. False,
    /// with nothing copied, unless one mapped range holds all of it.
    bool read(std::uint64_t addr, void* buf, std::size_t len) const;
    bool write(std::uint64_t addr, const void* buf, std::size_t len) const;

    std::size_t ranges() const { return m_maps.size(); }
    std::uint64_t bytes() const;

private:
    struct range {
        std::uint64_t addr;
        std::uint64_t len;
        unsigned char* base;
    };
    unsigned char* find(std::uint64_t addr, std::size_t len) const;

    std::vector<range> m_maps;
};

}  // namespace odl::model::linkd
