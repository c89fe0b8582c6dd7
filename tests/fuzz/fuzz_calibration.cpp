// SPDX-License-Identifier: MIT
// The calibration loader (model/src/host/calibration.cpp): a calibration
// file is loaded or refused with "<file>:<line>: ..." and nothing else
// escapes; a loaded one names every platform it holds.
#include <cstdint>
#include <cstdlib>

#include "fuzz_file.h"
#include "odl/model/host/platform.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = odl::fuzz::as_file(data, size, "calibration.yaml");
    odl::fuzz::loads_or_fails_cleanly(path, [&] {
        const auto cal = odl::model::load_calibration(path);
        for (const auto& [name, p] : cal.platforms)
            if (&cal.get(name) != &p) std::abort();
    });
    return 0;
}
