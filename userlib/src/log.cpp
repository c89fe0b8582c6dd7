// SPDX-License-Identifier: MIT
// The log callback installed by odl_set_log_fn().
#include "log.h"

#include <atomic>
#include <mutex>

namespace odl::log {
namespace {
std::mutex g_mutex;
odl_log_fn g_fn = nullptr;
void* g_arg = nullptr;
std::atomic<int> g_max_level{-1};  // -1: no callback installed
}  // namespace

bool enabled(int level) { return level <= g_max_level.load(std::memory_order_relaxed); }

void emit(int level, const std::string& msg) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_fn) g_fn(g_arg, level, msg.c_str());
}

}  // namespace odl::log

extern "C" void odl_set_log_fn(odl_log_fn fn, void* arg, int max_level) {
    std::lock_guard<std::mutex> lock(odl::log::g_mutex);
    odl::log::g_fn = fn;
    odl::log::g_arg = arg;
    odl::log::g_max_level.store(fn ? max_level : -1, std::memory_order_relaxed);
}
