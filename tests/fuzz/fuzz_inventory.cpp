// SPDX-License-Identifier: MIT
// The HIL inventory loader (hil/src/inventory.cpp): an inventory is loaded
// or refused with "<file>:<line>: ..." and nothing else escapes.
#include <cstdint>

#include "fuzz_file.h"
#include "odl/hil/inventory.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = odl::fuzz::as_file(data, size, "hosts.yaml");
    odl::fuzz::loads_or_fails_cleanly(path, [&] { (void)odl::hil::load_inventory(path); });
    return 0;
}
