// SPDX-License-Identifier: MIT
// The model's YAML helper: durations as SystemC times.
#include "yaml_util.h"

#include <fmt/format.h>

namespace odl::model::yaml {

sc_core::sc_time get_time(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    double v = 0;
    std::string u;
    if (split_unit(s, &v, &u)) {
        if (u == "ps") return sc_core::sc_time(v, sc_core::SC_PS);
        if (u == "ns") return sc_core::sc_time(v, sc_core::SC_NS);
        if (u == "us") return sc_core::sc_time(v, sc_core::SC_US);
        if (u == "ms") return sc_core::sc_time(v, sc_core::SC_MS);
        if (u == "s") return sc_core::sc_time(v, sc_core::SC_SEC);
    }
    fail(file, n, fmt::format("expected {} as a duration like 10us, 1.5ms or 250ns, got '{}'",
                              what, s));
}

}  // namespace odl::model::yaml
