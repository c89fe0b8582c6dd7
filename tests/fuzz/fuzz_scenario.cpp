// SPDX-License-Identifier: MIT
// The scenario loader (model/src/scenario/scenario_parse.cpp): a scenario is
// loaded or refused with "<file>:<line>: ..." and nothing else escapes.
#include <cstdint>

#include "fuzz_file.h"
#include "odl/model/scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = odl::fuzz::as_file(data, size, "scenario.yaml");
    odl::fuzz::loads_or_fails_cleanly(path, [&] { (void)odl::model::load_scenario(path); });
    return 0;
}
