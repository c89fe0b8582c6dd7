// SPDX-License-Identifier: MIT
// This process's plugin statistics file, read whole (tests check links'
// peers and counters in it).
#pragma once

#include <unistd.h>

#include <fstream>

#include "odl/wire/nccl_stats.h"
#include "pair_harness.h"

namespace odl::plugin::test {

inline stats_file read_stats() {
    stats_file st{};
    std::ifstream f(stats_dir() + "/" + stats_file_name(getpid()), std::ios::binary);
    PCHECK(f.read(reinterpret_cast<char*>(&st), sizeof(st)).good());
    PCHECK(st.magic == kStatsMagic);
    return st;
}

}  // namespace odl::plugin::test
