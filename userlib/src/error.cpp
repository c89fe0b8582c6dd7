// SPDX-License-Identifier: MIT
// Status texts and the per-thread last-error message.
#include "error.h"

namespace odl {
namespace {
thread_local std::string t_last_error;
}

int set_last_error(int status, std::string msg) {
    t_last_error = std::move(msg);
    return status;
}

void clear_last_error() { t_last_error.clear(); }

const char* last_error() { return t_last_error.c_str(); }

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
