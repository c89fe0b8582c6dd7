// SPDX-License-Identifier: MIT
// The interrupt unit's names, apart from the factory so that code which only
// parses scenarios (the fuzz targets) needs no RTL.
#include "odl/model/nhi/irq_unit.h"

namespace odl::model {

std::optional<irq_impl> parse_irq_impl(std::string_view s) {
    if (s == "model") return irq_impl::model;
    if (s == "rtl") return irq_impl::rtl;
    if (s == "lockstep") return irq_impl::lockstep;
    return std::nullopt;
}

const char* to_string(irq_impl i) {
    switch (i) {
    case irq_impl::model: return "model";
    case irq_impl::rtl: return "rtl";
    case irq_impl::lockstep: return "lockstep";
    }
    return "?";
}

}  // namespace odl::model
