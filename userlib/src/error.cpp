// SPDX-License-Identifier: MIT
// Status texts and the per-thread last-error message.
#include "error.h"

#include <algorithm>
#include <cstring>

namespace odl {
namespace {
// A plain array, not std::string: a thread_local with a destructor makes
// glibc keep the library mapped after dlclose(), and the NCCL plugin that
// links libodl is unloaded by NCCL >= 2.28.
constexpr size_t kLastErrorBytes = 512;
thread_local char t_last_error[kLastErrorBytes];
}  // namespace

int set_last_error(int status, std::string msg) {
    const size_t n = std::min(msg.size(), kLastErrorBytes - 1);
    std::memcpy(t_last_error, msg.data(), n);
    t_last_error[n] = '\0';
    return status;
}

void clear_last_error() { t_last_error[0] = '\0'; }

const char* last_error() { return t_last_error; }

}  // namespace odl

extern "C" const char* odl_strerror(int status) {
    switch (status) {
    case ODL_OK: return "success";
    case ODL_ERR_INVAL: return "invalid argument";
    case ODL_ERR_NO_BACKEND: return "no such backend";
    case ODL_ERR_NO_DEVICE: return "no such device";
    case ODL_ERR_IO: return "input/output error";
    case ODL_ERR_PEER_LOST: return "peer lost";
    case ODL_ERR_PEER_CLOSED: return "peer closed the link";
    case ODL_ERR_TIMEOUT: return "timed out";
    case ODL_ERR_AGAIN: return "queue full, try again";
    case ODL_ERR_NOMEM: return "out of memory";
    case ODL_ERR_TRUNCATED: return "message truncated";
    case ODL_ERR_PROTO: return "protocol error";
    case ODL_ERR_TOO_BIG: return "message too big";
    case ODL_ERR_NOT_SUPPORTED: return "not supported";
    case ODL_ERR_CANCELED: return "canceled";
    default: return "unknown status";
    }
}

extern "C" const char* odl_last_error(void) { return odl::last_error(); }
