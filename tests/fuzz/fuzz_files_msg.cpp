// SPDX-License-Identifier: MIT
// The file service's decoder (include/odl/wire/files_codec.h), which sees
// every message a peer sends before its tag is checked. Input: a side byte,
// the sequence number due, then the message. What passes must be exactly
// what the service then reads: lengths that add up, paths that stay inside
// the served folder, entries that fill their message.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "odl/wire/files_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

/// A path that passed must not climb out, start at the root or hide a NUL.
void check_path(const char* p, size_t n, bool may_be_empty) {
    require(n <= ODL_FILES_PATH_MAX);
    require(n > 0 || may_be_empty);
    if (n == 0) return;
    require(p[0] != '/');
    require(std::memchr(p, '\0', n) == nullptr);
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '/') continue;
        const size_t len = i - start;
        require(len > 0 && len <= ODL_FILES_NAME_MAX);
        require(!(len == 2 && p[start] == '.' && p[start + 1] == '.'));
        require(!(len == 1 && p[start] == '.'));
        start = i + 1;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 9) return 0;
    const auto from = (data[0] & 1) ? ODL_FILES_FROM_SERVER : ODL_FILES_FROM_CLIENT;
    const uint32_t chunk = (data[0] & 2) ? ODL_FILES_CHUNK_MIN : ODL_FILES_CHUNK_DEFAULT;
    uint64_t seq = 0;
    std::memcpy(&seq, data + 1, 8);
    const uint8_t* m = data + 9;
    const size_t n = size - 9;

    odl_files_hdr h{};
    if (odl_files_check(m, n, from, seq, chunk, &h)) return 0;
    const uint32_t type = odl_le16(h.type);
    const uint32_t len = odl_le32(h.len);
    require(len == n - ODL_FILES_HDR_BYTES - ODL_FILES_TAG_BYTES);
    require(odl_files_type_from(type, from));
    require(odl_le64(h.seq) == (type == ODL_FILES_PAIR ? 0 : seq));
    const uint8_t* p = m + ODL_FILES_HDR_BYTES;

    switch (type) {
    case ODL_FILES_PUT: {
        odl_files_put put;
        require(len >= sizeof(put));
        std::memcpy(&put, p, sizeof(put));
        require(odl_le32(put.path_len) == len - sizeof(put));
        check_path(reinterpret_cast<const char*>(p + sizeof(put)), len - sizeof(put), false);
        break;
    }
    case ODL_FILES_GET:
    case ODL_FILES_LIST:
    case ODL_FILES_MKDIR:
    case ODL_FILES_REMOVE: {
        odl_files_path fp;
        require(len >= sizeof(fp));
        std::memcpy(&fp, p, sizeof(fp));
        require(odl_le32(fp.path_len) == len - sizeof(fp));
        check_path(reinterpret_cast<const char*>(p + sizeof(fp)), len - sizeof(fp), type == ODL_FILES_LIST);
        break;
    }
    case ODL_FILES_DATA:
        require(len > sizeof(odl_files_data) && len - sizeof(odl_files_data) <= chunk);
        break;
    case ODL_FILES_ENTRIES: {
        // Walk it as the client does: every entry and path inside the message.
        odl_files_entries e;
        require(len >= sizeof(e));
        std::memcpy(&e, p, sizeof(e));
        size_t off = sizeof(e);
        for (uint32_t i = 0; i < odl_le32(e.count); i++) {
            odl_files_entry en;
            require(off + sizeof(en) <= len);
            std::memcpy(&en, p + off, sizeof(en));
            off += sizeof(en);
            require(off + odl_le16(en.path_len) <= len);
            check_path(reinterpret_cast<const char*>(p + off), odl_le16(en.path_len), false);
            off += odl_le16(en.path_len);
        }
        require(off == len);
        break;
    }
    case ODL_FILES_ERROR: {
        odl_files_error er;
        require(len >= sizeof(er));
        std::memcpy(&er, p, sizeof(er));
        require(odl_le32(er.text_len) == len - sizeof(er) && len - sizeof(er) <= ODL_FILES_TEXT_MAX);
        break;
    }
    default:
        break;
    }
    return 0;
}
