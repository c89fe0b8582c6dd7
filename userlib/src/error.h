// SPDX-License-Identifier: MIT
// Status codes as exceptions for setup paths, and the per-thread error text.
#pragma once

#include <stdexcept>
#include <string>

#include "odl/odl.h"

namespace odl {

/// Thrown on setup paths (open, registration); the C API turns it back into
/// a status and keeps the message for odl_last_error().
class error : public std::runtime_error {
public:
    error(int status, const std::string& what) : std::runtime_error(what), m_status(status) {}
    int status() const noexcept { return m_status; }

private:
    int m_status;
};

/// Records @msg as the calling thread's last error and returns @status.
int set_last_error(int status, std::string msg);
/// Clears the calling thread's last error.
void clear_last_error();
const char* last_error();

}  // namespace odl
