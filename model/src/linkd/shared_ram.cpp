// SPDX-License-Identifier: MIT
#include "shared_ram.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "odl/wire/linkd.h"

namespace odl::model::linkd {

bool shared_ram::add(int fd, std::uint64_t addr, std::uint64_t len,
                     std::uint64_t offset, std::string& err) {
    constexpr std::uint64_t align = ODL_LINKD_MEM_MAP_ALIGN;
    if (len == 0 || (addr | len | offset) % align || addr + len < addr ||
        offset + len < offset) {
        err = fmt::format("bad range 0x{:x}+0x{:x} at offset 0x{:x}", addr, len, offset);
        return false;
    }
    if (m_maps.size() >= ODL_LINKD_MAX_MEM_MAPS) {
        err = fmt::format("more than {} ranges", ODL_LINKD_MAX_MEM_MAPS);
        return false;
    }
    for (const range& r : m_maps) {
        if (addr < r.addr + r.len && r.addr < addr + len) {
            err = fmt::format("range 0x{:x}+0x{:x} overlaps 0x{:x}+0x{:x}", addr, len,
                              r.addr, r.len);
            return false;
        }
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        offset + len > static_cast<std::uint64_t>(st.st_size)) {
        err = fmt::format("range 0x{:x}+0x{:x} at offset 0x{:x} is not inside the file "
                          "({} bytes)", addr, len, offset, static_cast<long long>(st.st_size));
        return false;
    }
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                     static_cast<off_t>(offset));
    if (p == MAP_FAILED) {
        err = fmt::format("mmap: {}", std::strerror(errno));
        return false;
    }
    m_maps.push_back({addr, len, static_cast<unsigned char*>(p)});
    return true;
}

void shared_ram::clear() {
    for (const range& r : m_maps) ::munmap(r.base, r.len);
    m_maps.clear();
}

std::uint64_t shared_ram::bytes() const {
    std::uint64_t n = 0;
    for (const range& r : m_maps) n += r.len;
    return n;
}

unsigned char* shared_ram::find(std::uint64_t addr, std::size_t len) const {
    for (const range& r : m_maps) {
        if (addr >= r.addr && len <= r.len && addr - r.addr <= r.len - len)
            return r.base + (addr - r.addr);
    }
    return nullptr;
}

bool shared_ram::read(std::uint64_t addr, void* buf, std::size_t len) const {
    const unsigned char* p = find(addr, len);
    if (!p) return false;
    std::memcpy(buf, p, len);
    return true;
}

bool shared_ram::write(std::uint64_t addr, const void* buf, std::size_t len) const {
    unsigned char* p = find(addr, len);
    if (!p) return false;
    std::memcpy(p, buf, len);
    return true;
}

}  // namespace odl::model::linkd
